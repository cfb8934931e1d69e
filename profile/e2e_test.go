package profile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
	"github.com/vllm-responder/vllm-responder/store"
)

func TestPodsAreResolvedFromWhatARealPrometheusScrapes(t *testing.T) {
	vllm := startSim(t, 0)
	other := startSim(t, 0)
	prom := testenv.Prometheus(t, testenv.PromOptions{
		ScrapeInterval: 200 * time.Millisecond,
		ScrapeTargets: []testenv.Target{
			{Addr: vllm.Addr, Labels: map[string]string{"pod": "vllm-0", "namespace": "llm"}},
			{Addr: other.Addr, Labels: map[string]string{"pod": "vllm-1", "namespace": "llm"}},
		},
	})
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t, testConfig(), v1.NewAPI(client), store.NewMemory(), "r1")
	testenv.WaitFor(t, 20*time.Second, "Prometheus to scrape both pods", func() bool {
		_, e0 := s.resolve(context.Background(), "vllm-0", "")
		_, e1 := s.resolve(context.Background(), "vllm-1", "llm")
		return e0 == nil && e1 == nil
	})
	if tg, err := s.resolve(context.Background(), "vllm-1", "llm"); err != nil || tg.Model != sim.DefaultConfig().ModelName {
		t.Fatalf("resolved %+v, %v; want the model_name of its series (for profile.kinds)", tg, err)
	}
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-1", RequestedBy: "alice"})
	if err != nil {
		t.Fatalf("capture: %v", err)
	}
	if rep.Endpoint != "http://"+other.Addr || rep.Namespace != "llm" {
		t.Fatalf("endpoint %s in %q, want http://%s in llm", rep.Endpoint, rep.Namespace, other.Addr)
	}
	if ps := other.Prof.State(); ps.Starts != 1 || ps.Stops != 1 {
		t.Fatalf("the wrong server was profiled: %+v", ps)
	}
	if ps := vllm.Prof.State(); ps.Starts != 0 {
		t.Fatalf("the other server was profiled: %+v", ps)
	}
	if err := s.Start(context.Background(), Request{Pod: "vllm-2"}, nil); !errors.Is(err, ErrUnknownPod) {
		t.Fatalf("unscraped pod: got %v, want ErrUnknownPod", err)
	}
}

func TestStoppingRedisMidCaptureStillStopsTheProfilerAndRefusesNewCaptures(t *testing.T) {
	vllm := startSim(t, 0)
	srv := testenv.StartRedis(t)
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "llm/vllm-1": vllm.Addr}), redisStore(t, srv.Addr, ""), "r1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	janitorDone := make(chan struct{})
	go func() { _ = s.RunJanitor(ctx); close(janitorDone) }()

	ch, done := reportChan()
	if err := s.Start(context.Background(), Request{Pod: "vllm-0", Duration: time.Second, RequestedBy: "alice"}, done); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "profiling to start", func() bool { return vllm.Prof.State().Active })
	srv.Stop()

	rep := waitReport(t, ch, 15*time.Second)
	if rep.Result != ResultOK || !strings.Contains(rep.String(), "the store could not be reached") {
		t.Fatalf("report with Redis down mid-capture:\n%s", rep)
	}
	if ps := vllm.Prof.State(); ps.Active || ps.Stops != 1 {
		t.Fatalf("profiler = %+v, want stopped", ps)
	}
	err := s.Start(context.Background(), Request{Pod: "vllm-1", RequestedBy: "bob"}, nil)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "refused while the store cannot be reached") {
		t.Fatalf("start with Redis down: got %v, want a refusal wrapping store.ErrUnavailable", err)
	}
	if got := counterValue(s.metrics.captures.WithLabelValues(ResultStoreUnavailable)); got != 1 {
		t.Fatalf("captures{result=store_unavailable} = %v", got)
	}
	if _, err := s.Running(context.Background()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("running with Redis down: %v", err)
	}

	srv.Start()
	testenv.WaitFor(t, 10*time.Second, "captures to be accepted again", func() bool {
		return s.Start(context.Background(), Request{Pod: "vllm-1", Duration: 10 * time.Millisecond, RequestedBy: "bob"}, done) == nil
	})
	if r := waitReport(t, ch, 5*time.Second); r.Result != ResultOK {
		t.Fatalf("capture after Redis came back:\n%s", r)
	}
	cancel()
	select {
	case <-janitorDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the janitor did not return after its context ended")
	}
}
