// Package testenv starts the real peers the tests talk to: Prometheus, Alertmanager and Redis,
// from the Debian packages that `make test` installs. Each server listens on a loopback port of
// its own and is stopped when the test ends. A missing binary fails the test with the command that
// installs it: a skipped test proves nothing.
package testenv

import (
	"bytes"
	"context"
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
	"testing"
	"time"
)

// Binary finds a peer's binary on PATH (or in /usr/bin, where Debian puts them), or fails the test.
func Binary(t testing.TB, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		if p := filepath.Join("/usr/bin", n); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not found: run `make test` (it installs prometheus, prometheus-alertmanager and redis-server) or apt-get install them", strings.Join(names, " or "))
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls cond until it is true or the deadline passes, then fails the test with what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := 10 * time.Millisecond
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(delay)
		if delay < 250*time.Millisecond {
			delay *= 2
		}
	}
}

// Process is a peer started by a test.
type Process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	env  []string
	mu   sync.Mutex
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs bin with args until the test ends. Its output is shown if the test fails.
func Start(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	return StartEnv(t, name, bin, nil, args...)
}

// StartEnv is Start with extra environment variables (KEY=value) on top of the test's own.
func StartEnv(t testing.TB, name, bin string, env []string, args ...string) *Process {
	t.Helper()
	p := &Process{name: name, out: &syncBuffer{}, env: env}
	p.start(t, bin, args...)
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- output of %s ---\n%s", name, tail(p.out.String(), 4000))
		}
	})
	return p
}

func (p *Process) start(t testing.TB, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// StartSim starts a vllm-sim binary like StartEnv, serving n pods on n fresh loopback addresses
// (args builds its arguments from them), and returns once every address serves vLLM metrics.
// FreePort's port is free when it is picked, not when the sim binds it: another process (a
// parallel test package) can take it in between, and the sim then exits. StartSim then starts it
// again on new addresses, up to three times.
func StartSim(t testing.TB, name, bin string, env []string, n int, args func(addrs []string) []string) (*Process, []string) {
	t.Helper()
	for range 3 {
		addrs := make([]string, n)
		for i := range addrs {
			addrs[i] = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		}
		p := StartEnv(t, name, bin, env, args(addrs)...)
		serving := func() bool { // the sim's own metrics, not whatever took the port
			for _, a := range addrs {
				if !servesVLLMMetrics("http://" + a + "/metrics") {
					return false
				}
			}
			return true
		}
		var ok bool
		WaitFor(t, 60*time.Second, name+" to listen or exit", func() bool {
			ok = serving()
			return ok || p.Exited()
		})
		if ok && !p.Exited() {
			return p, addrs
		}
		t.Logf("%s exited before listening on %v (a port taken meanwhile?); starting it again on new ports", name, addrs)
	}
	t.Fatalf("%s did not listen on fresh ports in three tries (its output follows)", name)
	return nil, nil
}

func servesVLLMMetrics(url string) bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return err == nil && resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte("vllm:num_requests_waiting"))
}

// Stop terminates the process and waits for it.
func (p *Process) Stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// Pid is the process' id (0 before it started).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// httpOK reports whether GET url answers 200.
func httpOK(url string) bool { return clientOK(http.DefaultClient, url) }

func clientOK(c *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRun(t testing.TB, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(string(out), 4000))
	}
}

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
