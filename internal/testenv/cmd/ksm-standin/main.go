// Command ksm-standin serves what kube-state-metrics (testenv.KSMRelease) would export for one
// Deployment of vLLM pods and the HorizontalPodAutoscaler that scales it, for the demo
// (scripts/demo.sh) where no Kubernetes runs. The pods are fixed; the HPA acts as Kubernetes'
// does on a Pods metric with an average-value target: every few seconds it reads its metric
// (a PromQL query of the average per pod), wants ceil(pods x reading / target) replicas within
// its min and max (unchanged within 10% of the target), and says ScalingLimited when it wants
// more than its max. Past the knee it is at its ceiling, as a real HPA with a low max would be.
//
//	ksm-standin --listen 127.0.0.1:9900 --namespace demo --deployment vllm-demo \
//	  --pods vllm-demo-0,vllm-demo-1,vllm-demo-2 --hpa-max 3 --hpa-target 20 \
//	  --prometheus http://127.0.0.1:9090 --reading 'avg(vllm:num_requests_waiting{namespace="demo"})'
//
// Pod i runs on node gpu-node-<i> (vllm-sim's dcgm-exporter stand-in names its nodes the same),
// each with --gpus-per-node GPUs, Ready, schedulable. POST /admin/node changes a node as a
// cordon or a GPU health agent would: {"node":"gpu-node-0","unschedulable":true,
// "conditions":{"SysLogsGPUFallenOff":"True"},"gpus_allocatable":7} (fields left out are kept).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

func main() { os.Exit(run(os.Args[1:])) }

// hpa is the stand-in HPA's state, updated from its metric.
type hpa struct {
	mu      sync.Mutex
	spec    testenv.KSMHPA
	reading *float64
}

// follow sets the HPA's reading, desired replicas and conditions from a reading of its metric
// (nil: none), as the HPA controller does for an average-value Pods metric.
func (h *hpa) follow(reading *float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &h.spec
	h.reading = reading
	s.Conditions = map[string]string{"AbleToScale": "True", "ScalingActive": "True", "ScalingLimited": "False"}
	if reading == nil {
		s.Conditions["ScalingActive"] = "False" // FailedGetPodsMetric
		s.Desired = s.Current
		return
	}
	target := s.Metrics[0].Target
	want := s.Current
	if ratio := *reading / target; math.Abs(ratio-1) > 0.1 {
		want = int(math.Ceil(float64(s.Current) * ratio))
	}
	switch {
	case want > s.Max:
		want, s.Conditions["ScalingLimited"] = s.Max, "True" // TooManyReplicas
	case want < s.Min:
		want, s.Conditions["ScalingLimited"] = s.Min, "True" // TooFewReplicas
	}
	s.Desired = want
	s.Metrics[0].Current = reading
}

func (h *hpa) state(base testenv.KSMState) testenv.KSMState {
	h.mu.Lock()
	defer h.mu.Unlock()
	spec := h.spec
	spec.Metrics = append([]testenv.KSMHPAMetric(nil), h.spec.Metrics...)
	base.HPAs = []testenv.KSMHPA{spec}
	return base
}

func run(args []string) int {
	fs := flag.NewFlagSet("ksm-standin", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9900", "address to serve /metrics on")
	ns := fs.String("namespace", "demo", "the Deployment's namespace")
	deploy := fs.String("deployment", "vllm-demo", "the Deployment (and its HPA) name")
	pods := fs.String("pods", "vllm-demo-0", "its pods, comma-separated")
	minR := fs.Int("hpa-min", 1, "the HPA's minReplicas")
	maxR := fs.Int("hpa-max", 3, "the HPA's maxReplicas")
	metric := fs.String("hpa-metric", "vllm_num_requests_waiting", "the HPA's Pods metric")
	target := fs.Float64("hpa-target", 20, "its averageValue target per pod")
	promURL := fs.String("prometheus", "", "Prometheus to read the metric from (empty: no reading, ScalingActive False)")
	reading := fs.String("reading", "", "PromQL of the metric's average per pod")
	every := fs.Duration("every", 3*time.Second, "how often the HPA reads its metric")
	gpus := fs.Int("gpus-per-node", 8, "GPUs (nvidia.com/gpu) on each pod's node; 0: no node objects")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var ps []testenv.KSMPod
	n := &nodes{}
	for i, p := range strings.Split(*pods, ",") {
		ps = append(ps, testenv.KSMPod{Name: strings.TrimSpace(p), Ready: true, Node: fmt.Sprintf("gpu-node-%d", i)})
		if *gpus > 0 {
			n.list = append(n.list, testenv.KSMGPUNode(fmt.Sprintf("gpu-node-%d", i), *gpus))
		}
	}
	base := testenv.KSMDeployment(*ns, *deploy, ps...)
	h := &hpa{spec: testenv.KSMHPA{Namespace: *ns, Name: *deploy, TargetKind: "Deployment", TargetName: *deploy,
		Min: *minR, Max: *maxR, Current: len(ps), Desired: len(ps),
		Metrics: []testenv.KSMHPAMetric{{Name: *metric, TargetType: "average", Target: *target}}}}
	h.follow(nil)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *promURL != "" && *reading != "" {
		client, err := api.NewClient(api.Config{Address: *promURL})
		if err != nil {
			fmt.Fprintln(os.Stderr, "ksm-standin:", err)
			return 1
		}
		go readLoop(ctx, v1.NewAPI(client), *reading, *every, h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprint(w, h.state(base).Add(n.state()).Exposition(time.Now()))
	})
	mux.Handle("POST /admin/node", n)
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "ksm-standin:", err)
		return 1
	}
	return 0
}

// readLoop reads the HPA's metric every period until ctx ends.
func readLoop(ctx context.Context, prom v1.API, query string, period time.Duration, h *hpa) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, period)
		v, _, _, err := prom.Query(qctx, query, time.Now())
		cancel()
		var r *float64
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) > 0 && !math.IsNaN(float64(vec[0].Value)) {
			f := float64(vec[0].Value)
			r = &f
		}
		h.follow(r)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// nodes are the pods' nodes, changed by POST /admin/node.
type nodes struct {
	mu   sync.Mutex
	list []testenv.KSMNode
}

func (n *nodes) state() testenv.KSMState {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]testenv.KSMNode, len(n.list))
	for i, x := range n.list {
		x.Conditions = maps.Clone(x.Conditions)
		out[i] = x
	}
	return testenv.KSMState{Nodes: out}
}

// nodeChange is the body of POST /admin/node: the fields set are changed, the others kept.
type nodeChange struct {
	Node            string            `json:"node"`
	Unschedulable   *bool             `json:"unschedulable"`
	Conditions      map[string]string `json:"conditions"`
	GPUsAllocatable *int              `json:"gpus_allocatable"`
}

func (n *nodes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var c nodeChange
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&c); err != nil {
		http.Error(w, "invalid JSON body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := n.apply(c); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (n *nodes) apply(c nodeChange) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := range n.list {
		x := &n.list[i]
		if x.Name != c.Node {
			continue
		}
		if c.Unschedulable != nil {
			x.Unschedulable = *c.Unschedulable
		}
		if c.GPUsAllocatable != nil {
			x.GPUsAllocatable = c.GPUsAllocatable
		}
		for k, v := range c.Conditions {
			if x.Conditions == nil {
				x.Conditions = map[string]string{}
			}
			x.Conditions[k] = v
		}
		return nil
	}
	return fmt.Errorf("no node %q", c.Node)
}
