package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
)

// With probe.enabled, `responder triage` of a stalled pod sends the probe and shows its result;
// a healthy pod is not probed. The stall is the recorded hung pod's (a real Prometheus); the
// probe goes to a live vllm-sim whose engine core hangs (probe.url_template points at it).
func TestTriageOfAStalledPodShowsTheProbe(t *testing.T) {
	t.Parallel()
	simCfg := sim.DefaultConfig()
	simCfg.ModelName = "llama-p" // the recorded pod's model_name: the probe asks for it
	eng, err := sim.NewEngine(simCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go eng.Run(ctx)
	eng.Hang(time.Now(), 0)
	defer eng.Release()
	srv := httptest.NewServer(sim.NewServer(eng, nil, zerolog.Nop()))
	defer srv.Close()

	prom := testenv.RecordedPrometheus(t, progressLoads())
	// Written here, not by writeConfig: its triages of a recording are evaluated at the
	// recording's time (--at), and a triage of the past sends no probe. This one runs now (the
	// hung pod's frozen gauges are a stall whenever it runs).
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(promConfig(prom.URL)+`
probe: {enabled: true, url_template: "`+srv.URL+`", timeout: 1s, min_interval: 1m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := triageOf(t, cfg, "", "pod=hung", "namespace=p", "model_name=llama-p")
	if res.Verdict != "engine-stalled" {
		t.Fatalf("verdict %s (%s)", res.Verdict, res.Summary)
	}
	var probe *triageEvidence
	for i := range res.Evidence {
		if res.Evidence[i].Name == "probe" {
			probe = &res.Evidence[i]
		}
	}
	if probe == nil || probe.Label != "a 1-token request timed out after 1 s" || probe.Value != nil ||
		probe.Query != "POST http://"+strings.TrimPrefix(srv.URL, "http://")+"/v1/completions {max_tokens: 1}" {
		t.Fatalf("probe evidence %+v", probe)
	}
	ok := triageOf(t, cfg, "", "pod=ok", "namespace=p", "model_name=llama-p")
	for _, e := range ok.Evidence {
		if e.Name == "probe" {
			t.Errorf("a %s pod was probed: %+v", ok.Verdict, e)
		}
	}
}
