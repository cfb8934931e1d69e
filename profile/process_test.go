package profile

// Tests with several responder processes: the test binary re-executes itself as a helper
// (PROFILE_TEST_HELPER=racer|holder) that runs a Service on the shared Redis and the parent's
// vLLM.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/silence"
	"github.com/vllm-responder/vllm-responder/store"
)

func TestMain(m *testing.M) {
	switch os.Getenv("PROFILE_TEST_HELPER") {
	case "":
		os.Exit(m.Run())
	case "racer":
		os.Exit(helperRacer())
	case "holder":
		os.Exit(helperHolder())
	default:
		fmt.Fprintln(os.Stderr, "unknown PROFILE_TEST_HELPER")
		os.Exit(2)
	}
}

// helperService builds the helper's Service from the environment the parent set.
func helperService() (*Service, error) {
	cfg := testConfig()
	if d, err := time.ParseDuration(os.Getenv("PROFILE_TEST_LOCK_TTL")); err == nil {
		cfg.LockTTL = d
	}
	if d, err := time.ParseDuration(os.Getenv("PROFILE_TEST_EXPECTED_FLUSH")); err == nil {
		cfg.Silence.ExpectedFlush = d
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := store.NewRedis("redis://"+os.Getenv("PROFILE_TEST_REDIS")+"/0", "", os.Getenv("PROFILE_TEST_PREFIX"))
	if err != nil {
		return nil, err
	}
	prom := &staticProm{series: []model.Metric{{"namespace": "llm", "pod": "vllm-0", "instance": model.LabelValue(os.Getenv("PROFILE_TEST_VLLM"))}}}
	d := Deps{Prometheus: prom, Store: st, Replica: os.Getenv("PROFILE_TEST_NAME"), Logger: zerolog.New(os.Stderr)}
	if am := os.Getenv("PROFILE_TEST_AM"); am != "" {
		if d.Silencer, err = silence.New(am, nil, 5*time.Second); err != nil {
			return nil, err
		}
	}
	s, err := New(cfg, d)
	if err != nil {
		return nil, err
	}
	s.grace = 100 * time.Millisecond
	return s, nil
}

// helperRacer reads "go N" lines and answers "won N", "busy N HOLDER" or "error N ..." at once;
// a capture it won runs until "release N", then it says "done N RESULT".
func helperRacer() int {
	s, err := helperService()
	if err != nil {
		fmt.Println("error 0", err)
		return 1
	}
	if err := s.store.Ping(context.Background()); err != nil { // connect before the first round
		fmt.Println("error 0", err)
		return 1
	}
	name := os.Getenv("PROFILE_TEST_NAME")
	var mu sync.Mutex
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	var won *capture
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		cmd, round, _ := strings.Cut(sc.Text(), " ")
		if cmd == "release" && won != nil {
			won.cutShort("released by the test")
			won = nil
			continue
		}
		c, err := s.start(context.Background(), Request{Pod: "vllm-0", Namespace: "llm", Duration: 30 * time.Second, RequestedBy: name},
			func(r *Report) { say("done %s %s", round, r.Result) })
		var busy *BusyError
		switch {
		case err == nil:
			won = c
			say("won %s", round)
		case errors.As(err, &busy):
			say("busy %s %s", round, busy.Holder)
		default:
			say("error %s %v", round, err)
		}
	}
	return 0
}

// helperHolder starts one capture with a long window, says "started ID", and waits to be killed.
func helperHolder() int {
	s, err := helperService()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	w, _ := time.ParseDuration(os.Getenv("PROFILE_TEST_WINDOW"))
	c, err := s.start(context.Background(), Request{Pod: "vllm-0", Namespace: "llm", Duration: w, RequestedBy: os.Getenv("PROFILE_TEST_NAME")}, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("started", c.rec.ID)
	select {}
}

// helperProc is a helper process with line-oriented stdin and stdout.
type helperProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startHelper(t *testing.T, mode string, env ...string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"PROFILE_TEST_HELPER=" + mode}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("--- stderr of %s helper ---\n%s", mode, tail(stderr.String(), 3000))
		}
	})
	return h
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (h *helperProc) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("helper exited")
		}
		return l
	case <-time.After(d):
		t.Fatalf("no line from the helper within %s", d)
		return ""
	}
}

func TestTwoResponderProcessesRacingForAPodHaveExactlyOneWinnerEachTime(t *testing.T) {
	vllm := startSim(t, 0)
	env := []string{"PROFILE_TEST_REDIS=" + testenv.RedisAddr(t), "PROFILE_TEST_PREFIX=" + uniquePrefix(t), "PROFILE_TEST_VLLM=" + vllm.Addr}
	procs := []*helperProc{
		startHelper(t, "racer", append(env, "PROFILE_TEST_NAME=racer-0")...),
		startHelper(t, "racer", append(env, "PROFILE_TEST_NAME=racer-1")...),
	}
	wins := [2]int{}
	const rounds = 100
	for round := 1; round <= rounds; round++ {
		for _, p := range procs {
			if _, err := fmt.Fprintf(p.in, "go %d\n", round); err != nil {
				t.Fatal(err)
			}
		}
		winner := -1
		for i, p := range procs {
			f := strings.Fields(p.next(t, 10*time.Second))
			if len(f) < 2 || f[1] != strconv.Itoa(round) {
				t.Fatalf("round %d: racer-%d said %q", round, i, f)
			}
			switch f[0] {
			case "won":
				if winner >= 0 {
					t.Fatalf("round %d: both racers won", round)
				}
				winner = i
			case "busy":
				if len(f) != 3 || f[2] != fmt.Sprintf("racer-%d", 1-i) {
					t.Fatalf("round %d: racer-%d refused with holder %q, want racer-%d", round, i, f, 1-i)
				}
			default:
				t.Fatalf("round %d: racer-%d said %q", round, i, f)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody won", round)
		}
		wins[winner]++
		if _, err := fmt.Fprintf(procs[winner].in, "release %d\n", round); err != nil {
			t.Fatal(err)
		}
		if l := procs[winner].next(t, 10*time.Second); l != fmt.Sprintf("done %d ok", round) {
			t.Fatalf("round %d: winner said %q", round, l)
		}
	}
	ps := vllm.Prof.State()
	if ps.Starts != rounds || ps.Stops != rounds || ps.Active {
		t.Fatalf("profiler = %d starts, %d stops, active %v; want %d bracketed captures", ps.Starts, ps.Stops, ps.Active, rounds)
	}
	t.Logf("wins: racer-0 %d, racer-1 %d", wins[0], wins[1])
}

func TestTheJanitorOfAnotherReplicaStopsTheProfileOfAKilledResponder(t *testing.T) {
	vllm := startSim(t, 0)
	redisAddr, prefix := testenv.RedisAddr(t), uniquePrefix(t)
	holder := startHelper(t, "holder", "PROFILE_TEST_REDIS="+redisAddr, "PROFILE_TEST_PREFIX="+prefix,
		"PROFILE_TEST_VLLM="+vllm.Addr, "PROFILE_TEST_NAME=alice", "PROFILE_TEST_WINDOW=1s", "PROFILE_TEST_LOCK_TTL=3s")
	line := holder.next(t, 10*time.Second)
	id, ok := strings.CutPrefix(line, "started ")
	if !ok {
		t.Fatalf("holder said %q", line)
	}
	testenv.WaitFor(t, 5*time.Second, "the holder to start profiling", func() bool { return vllm.Prof.State().Active })

	other := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), redisStore(t, redisAddr, prefix), "replica-b")
	var rec Record
	testenv.WaitFor(t, 5*time.Second, "the holder's record in the profiling state", func() bool {
		recs, err := other.Running(context.Background())
		if err == nil && len(recs) == 1 && recs[0].State == StateProfiling {
			rec = recs[0]
		}
		return rec.ID != ""
	})
	if rec.ID != id || rec.RequestedBy != "alice" {
		t.Fatalf("record = %+v, want alice's capture %s", rec, id)
	}
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.cmd.Wait()
	killedAt := time.Now()
	if !vllm.Prof.State().Active {
		t.Fatal("profiling stopped before the janitor ran")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go other.RunJanitor(ctx)
	// The janitor must not act before the deadline (the owner could be alive), and must have
	// stopped the profiler soon after it.
	limit := rec.Deadline.Add(other.cfg.JanitorInterval + 2*time.Second)
	testenv.WaitFor(t, time.Until(limit), "the janitor to stop the profiler", func() bool { return !vllm.Prof.State().Active })
	stoppedBy := time.Now()
	if stoppedBy.Before(rec.Deadline) {
		t.Fatalf("stopped at %s, before the capture's deadline %s", stoppedBy, rec.Deadline)
	}
	t.Logf("killed %s before the deadline; stopped %s after it", rec.Deadline.Sub(killedAt).Round(time.Millisecond), stoppedBy.Sub(rec.Deadline).Round(time.Millisecond))
	testenv.WaitFor(t, 5*time.Second, "the record to be cleared", func() bool {
		recs, err := other.Running(context.Background())
		return err == nil && len(recs) == 0
	})
	if ps := vllm.Prof.State(); ps.Stops != 1 || len(ps.Traces) == 0 {
		t.Fatalf("profiler = %+v, want one stop with traces", ps)
	}
	// The dead holder's lock lapses by its TTL; then the pod can be profiled again.
	testenv.WaitFor(t, 10*time.Second, "the pod to be free again", func() bool {
		err := other.Start(context.Background(), Request{Pod: "vllm-0", Namespace: "llm", Duration: 10 * time.Millisecond, RequestedBy: "bob"}, nil)
		var busy *BusyError
		if errors.As(err, &busy) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
}
