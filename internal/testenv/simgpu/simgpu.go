// Package simgpu starts, for a test's Prometheus, a vllm-sim pod and its node's dcgm-exporter
// stand-in, scraped as a cluster scrapes them. It is apart from package testenv because package
// sim's own tests use testenv.
package simgpu

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
)

// Pod is one vllm-sim pod on a GPU node of its own.
type Pod struct {
	// Name is the pod's name; Namespace its namespace (default inference).
	Name, Namespace string
	// Node is its node, the exporter's Hostname; GPUs the node's GPUs (default 4; the pod holds
	// the first TP).
	Node string
	GPUs int
	// TP is its tensor-parallel size (default 1); Seed its seed.
	TP   int
	Seed uint64
	// Scenario is what it runs from the start (default healthy): the exporter starts with it (an
	// XID it has as stale is on the gauge from the first scrape).
	Scenario string
	// Optional: the exporter writes the fields dcgm-exporter's CSV ships commented out.
	Optional bool
}

// Start runs p's engine until ctx ends, serves it and its node's dcgm-exporter stand-in on
// loopback ports until the test ends, and returns the engine and the two scrape targets: the
// pod's (job vllm, its namespace and pod) and the exporter's as a cluster scrapes it (job
// dcgm-exporter, with the exporter's own pod, namespace and container as target labels, which
// collide with the payload's: the vLLM pod arrives in exported_pod, exported_namespace).
func Start(ctx context.Context, t testing.TB, p Pod) (*sim.Engine, []testenv.Target) {
	t.Helper()
	if p.Namespace == "" {
		p.Namespace = "inference"
	}
	if p.GPUs == 0 {
		p.GPUs = 4
	}
	if p.Scenario == "" {
		p.Scenario = "healthy"
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.TensorParallelSize, cfg.PodName = p.Seed, max(p.TP, 1), p.Name
	eng, err := sim.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.LookupScenario(p.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	eng.SetScenario(sc, true, time.Now())
	go eng.Run(ctx)
	x, err := sim.NewDCGMExporter(eng, sim.DCGMOptions{Node: p.Node, GPUs: p.GPUs, Namespace: p.Namespace, Optional: p.Optional}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	vs := httptest.NewServer(sim.NewServer(eng, nil, zerolog.Nop()))
	ds := httptest.NewServer(x)
	t.Cleanup(vs.Close)
	t.Cleanup(ds.Close)
	return eng, []testenv.Target{
		{Addr: strings.TrimPrefix(vs.URL, "http://"), Labels: map[string]string{"namespace": p.Namespace, "pod": p.Name}},
		{Addr: strings.TrimPrefix(ds.URL, "http://"), Job: "dcgm-exporter",
			Labels: map[string]string{"namespace": "gpu-operator", "pod": "dcgm-exporter-" + p.Node, "container": "exporter"}},
	}
}
