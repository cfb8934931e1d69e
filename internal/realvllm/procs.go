//go:build realvllm

package realvllm

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// vLLM's processes, found by their titles (vLLM sets them with setproctitle, which rewrites
// /proc/<pid>/cmdline): the API server (the script's own process: it execs python) serves HTTP
// and /metrics; its child "VLLM::EngineCore" runs the scheduler and its child "VLLM::Worker" the
// model (on the CPU backend too).

// APIServerPID is the pid of the API server process.
func (s *Server) APIServerPID() int { return s.cmd.Process.Pid }

// EngineCorePID is the pid of the API server's child titled VLLM::EngineCore.
func (s *Server) EngineCorePID() (int, error) {
	return childTitled(s.APIServerPID(), "VLLM::EngineCore")
}

// WorkerPID is the pid of the engine core's child titled VLLM::Worker.
func (s *Server) WorkerPID() (int, error) {
	ec, err := s.EngineCorePID()
	if err != nil {
		return 0, err
	}
	return childTitled(ec, "VLLM::Worker")
}

// SignalEngineCore sends sig (SIGSTOP: a hang inside a step, a GPU fault that leaves the process
// alive, a collective hang; SIGCONT: the hang ends) to the engine core process only.
func (s *Server) SignalEngineCore(sig syscall.Signal) error {
	pid, err := s.EngineCorePID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d (VLLM::EngineCore): %w", sig, pid, err)
	}
	return nil
}

// EngineStop is a stop of the engine core (SIGSTOP) until Resume (SIGCONT): a hang as a test
// makes it.
type EngineStop struct {
	srv *Server
	// At is when the engine core was stopped.
	At      time.Time
	resumed bool
}

// StopEngineCore stops the engine core (SIGSTOP) until Resume. A test that ends before Resume
// (it failed) sends SIGCONT at its cleanup, so that no engine stays stopped for the next test.
func (s *Server) StopEngineCore(t testing.TB) *EngineStop {
	t.Helper()
	if err := s.SignalEngineCore(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	e := &EngineStop{srv: s, At: time.Now()}
	t.Cleanup(func() {
		if !e.resumed {
			_ = s.SignalEngineCore(syscall.SIGCONT)
		}
	})
	return e
}

// Resume ends the stop (SIGCONT) and says when.
func (e *EngineStop) Resume(t testing.TB) time.Time {
	t.Helper()
	if err := e.srv.SignalEngineCore(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	e.resumed = true
	return time.Now()
}

// ProcState is the state letter of /proc/<pid>/stat ("T": stopped by a signal).
func ProcState(pid int) (string, error) {
	f, err := procStat(pid)
	if err != nil {
		return "", err
	}
	return f[0], nil
}

// ProcCPUSeconds is the user + system CPU time of a process so far.
func ProcCPUSeconds(pid int) (float64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	// Fields after the command: state(0) ppid(1) ... utime(11) stime(12), in clock ticks (USER_HZ,
	// 100 on Linux).
	u, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return (u + st) / 100, nil
}

// procStat returns the fields of /proc/<pid>/stat after the command (which may hold spaces).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// childTitled finds the child of parent whose command line starts with title. vLLM sets the
// titles once its processes run: callers look only after /health answered.
func childTitled(parent int, title string) (int, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var seen []string
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err != nil || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(d + "/cmdline")
		c := strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " ")
		if strings.HasPrefix(c, title) {
			return pid, nil
		}
		seen = append(seen, fmt.Sprintf("%d %q", pid, c))
	}
	return 0, fmt.Errorf("no child of pid %d titled %s (children: %v)", parent, title, seen)
}

// waitGone waits until pid has exited (or is a zombie), up to timeout.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if st, err := ProcState(pid); err != nil || st == "Z" {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
