package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchTB lets the harness reuse the test helpers (internal/testenv, fakeslack), which take a
// testing.TB, outside `go test`. Only the methods those helpers call are implemented; a fatal
// error runs the cleanups (stopping the peers) and exits.
type benchTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
	dirs     []string
}

func (t *benchTB) Helper() {}

func (t *benchTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *benchTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (t *benchTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	t.Logf("error: "+format, args...)
}

func (t *benchTB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.runCleanups()
	os.Exit(1)
}

func (t *benchTB) Fatal(args ...any) { t.Fatalf("%s", fmt.Sprint(args...)) }

func (t *benchTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *benchTB) TempDir() string {
	d, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		t.Fatalf("tempdir: %v", err)
	}
	t.mu.Lock()
	t.dirs = append(t.dirs, d)
	t.mu.Unlock()
	return d
}

func (t *benchTB) runCleanups() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	dirs := t.dirs
	t.dirs = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// countingProxy sits between the responder and the real Prometheus and counts instant queries
// (/api/v1/query), by query text.
type countingProxy struct {
	srv   *http.Server
	URL   string
	mu    sync.Mutex
	total int
	byQ   map[string]int
}

func startCountingProxy(t *benchTB, target string) *countingProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target: %v", err)
	}
	p := &countingProxy{byQ: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	// Transparent: the client's Accept-Encoding (none, from the responder) goes through as it is;
	// a Transport left to compress would make Prometheus gzip every answer for the proxy.
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/query" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			q := r.URL.Query().Get("query")
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("query") != "" {
				q = form.Get("query")
			}
			p.mu.Lock()
			p.total++
			p.byQ[q]++
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p.srv = &http.Server{Handler: h}
	p.URL = "http://" + ln.Addr().String()
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = 0
	p.byQ = map[string]int{}
}

func (p *countingProxy) counts() (total, distinct int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, len(p.byQ)
}

// responderProc is `responder serve` run as a subprocess (the binary `go build ./cmd/responder`
// makes), so that its RSS and goroutines are its own.
type responderProc struct {
	cmd    *exec.Cmd
	URL    string
	Stderr string
	done   chan struct{}
}

func startResponder(t *benchTB, bin, config string, stdout io.Writer) *responderProc {
	dir := t.TempDir()
	port := freePort(t)
	cfgPath := filepath.Join(dir, "config.yaml")
	config = fmt.Sprintf("listen: \"127.0.0.1:%d\"\n%s", port, config)
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatalf("write config: %v", err)
	}
	errPath := filepath.Join(dir, "stderr.log")
	errf, err := os.Create(errPath)
	if err != nil {
		t.Fatalf("%v", err)
	}
	cmd := exec.Command(bin, "serve", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = stdout, errf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start responder: %v", err)
	}
	p := &responderProc{cmd: cmd, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Stderr: errPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); errf.Close(); close(p.done) }()
	t.Cleanup(p.stop)
	waitFor(t, 15*time.Second, "responder /healthz", func() bool { return httpOK(p.URL + "/healthz") })
	return p
}

func (p *responderProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// peakRSS is VmHWM of the process, in bytes.
func (p *responderProc) peakRSS() (int64, error) { return procStatus(p.cmd.Process.Pid, "VmHWM") }

func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		fields := strings.Fields(v)
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return n * 1024, nil // kB
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// noKeepAlive scrapes /metrics without leaving a connection (and its goroutine) open.
var noKeepAlive = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// metric returns the value of one series of a /metrics page (the sum when several match a prefix
// ending in "{").
func metric(url, series string) (float64, bool) {
	r, err := noKeepAlive.Get(url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sum, found := 0.0, false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if name == series || (strings.HasSuffix(series, "{") && strings.HasPrefix(name, series)) {
			v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err == nil {
				sum += v
				found = true
			}
		}
	}
	return sum, found
}

func freePort(t *benchTB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func httpOK(url string) bool {
	r, err := noKeepAlive.Get(url)
	if err != nil {
		return false
	}
	r.Body.Close()
	return r.StatusCode == http.StatusOK
}

func waitFor(t *benchTB, timeout time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }

// machine describes where the bench ran.
func machine() (cpu string, cores int) {
	cores = runtime.NumCPU()
	cpu = "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return cpu, cores
}

// cpuTime is the CPU time (user + system) process pid has used, from /proc/<pid>/stat; 0 when
// it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (which may hold spaces) in parentheses: utime is the 14th
	// field of the line, stime the 15th, in clock ticks (100 a second on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
