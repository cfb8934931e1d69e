package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// FleetScenario is a load on several pods of one model at once: who the clients are, how the
// router in front of the pods spreads them, and which engines are wedged.
type FleetScenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Load is the per-pod scenario the clients follow (request shapes, and the rate unless
	// RatePerPod is set).
	Load string `json:"load"`
	// RatePerPod sets the fleet's total arrivals to RatePerPod x pods, spread by the router:
	// pod 0 gets HotWeight shares, every other pod one share (a Poisson stream split at random
	// by weight is a Poisson stream per pod). 0 keeps Load's own rate on every pod.
	RatePerPod float64 `json:"rate_per_pod"`
	HotWeight  float64 `json:"hot_weight"`
	// StalledPods wedges the engines of the first StalledPods pods (the load still arrives).
	StalledPods int `json:"stalled_pods"`
	// FirstPods pods (the first ones) follow the pod scenario FirstPodsLoad instead of Load: a
	// fault on one pod among healthy siblings (gpu-thermal-throttle), or one pod left idle.
	FirstPods     int    `json:"first_pods,omitempty"`
	FirstPodsLoad string `json:"first_pods_load,omitempty"`
	// RolloutStagger > 0: a rollout replaces every pod by a new pod (a new name, an empty
	// engine, counters at 0), pod i RolloutStagger x (i+1) after the switch.
	RolloutStagger time.Duration `json:"rollout_stagger,omitempty"`
	revision       int
}

// FleetScenarios are the built-in multi-pod loads.
var FleetScenarios = map[string]FleetScenario{
	"engine-stall": {
		Name: "engine-stall", Description: "healthy load on every pod; the engine of pod 0 is wedged: its queue grows, it computes nothing, its siblings serve",
		Load: "healthy", StalledPods: 1,
	},
	"router-imbalance": {
		Name: "router-imbalance", Description: "short requests at 20 req/s per pod overall (the fleet is about 60% busy), but the router sends pod 0 eight shares to every other pod's one: pod 0 is past the knee while its siblings idle",
		Load: "overload", RatePerPod: 20, HotWeight: 8,
	},
	"rollout": {
		Name: "rollout", Description: "healthy load; a rollout replaces every pod by a new one, 10 s apart: new pod names (GET /admin/targets), empty engines, counters from 0, a new process_start_time_seconds; no pod-scoped series has a day of history",
		Load: "healthy", RolloutStagger: 10 * time.Second,
	},
}

// Fleet is several simulated pods of one model, each an Engine of its own behind its own
// listener, with a router model in front for fleet scenarios.
type Fleet struct {
	Engines []*Engine
	current string

	mu       sync.Mutex
	addrs    []string          // each pod's scrape address, for GET /admin/targets
	labels   map[string]string // added to every target
	revision int               // rollouts so far
}

// NewFleet wraps engines (one per pod) as a fleet.
func NewFleet(engines ...*Engine) *Fleet { return &Fleet{Engines: engines} }

// FleetScenarioNames lists the fleet scenarios in a stable order.
func FleetScenarioNames() []string {
	names := make([]string, 0, len(FleetScenarios))
	for n := range FleetScenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Apply switches every pod: a fleet scenario spreads its load by the router's weights; a pod
// scenario name gives every pod that load.
func (f *Fleet) Apply(name string, reset bool, now time.Time) error {
	name = strings.TrimSpace(name)
	fs, ok := FleetScenarios[name]
	if !ok {
		if _, err := LookupScenario(name); err != nil {
			return fmt.Errorf("unknown scenario %q (fleet: %s; per pod: %s)", name, strings.Join(FleetScenarioNames(), ", "), strings.Join(ScenarioNames(), ", "))
		}
		fs = FleetScenario{Name: name, Load: name}
	}
	if fs.RolloutStagger > 0 {
		f.mu.Lock()
		f.revision++
		fs.revision = f.revision
		f.mu.Unlock()
	}
	for i, sc := range f.Plan(fs) {
		f.Engines[i].SetScenario(sc, reset, now)
	}
	f.current = fs.Name
	return nil
}

// Plan returns each pod's scenario under fs.
func (f *Fleet) Plan(fs FleetScenario) []Scenario {
	base, err := LookupScenario(fs.Load)
	if err != nil {
		base = Scenarios["idle"]
	}
	n := len(f.Engines)
	out := make([]Scenario, n)
	hot := fs.HotWeight
	if hot <= 0 {
		hot = 1
	}
	shares := hot + float64(n-1)
	first, err := LookupScenario(fs.FirstPodsLoad)
	if err != nil {
		first = base
	}
	for i := range out {
		sc := base
		if i < fs.FirstPods {
			sc = first
		}
		if fs.Name != fs.Load {
			sc.Name = fs.Name
		}
		if fs.RatePerPod > 0 {
			w := 1.0
			if i == 0 {
				w = hot
			}
			sc.ArrivalRate = fs.RatePerPod * float64(n) * w / shares
		}
		sc.EngineStalled = sc.EngineStalled || i < fs.StalledPods
		if fs.RolloutStagger > 0 {
			sc.Replace, sc.ReplaceAfter, sc.Revision = true, fs.RolloutStagger*time.Duration(i+1), fs.revision
		}
		out[i] = sc
	}
	return out
}

type fleetPod struct {
	Pod      int      `json:"pod"`
	Scenario Scenario `json:"scenario"`
	Stats    Stats    `json:"stats"`
}

type fleetResponse struct {
	Scenario string     `json:"scenario"`
	Pods     []fleetPod `json:"pods"`
}

func (f *Fleet) state() fleetResponse {
	r := fleetResponse{Scenario: f.current}
	for i, e := range f.Engines {
		r.Pods = append(r.Pods, fleetPod{Pod: i, Scenario: e.Scenario(), Stats: e.Stats()})
	}
	return r
}

// Handler serves GET /admin/fleet (every pod's scenario and stats) and POST /admin/fleet
// (body {"scenario":"router-imbalance"} or ?name=..., optional "reset", default true).
func (f *Fleet) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, http.StatusOK, f.state())
			return
		}
		var body struct {
			Scenario string `json:"scenario"`
			Reset    *bool  `json:"reset"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && err != io.EOF {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON body: " + err.Error()})
				return
			}
		}
		name := firstNonEmpty(body.Scenario, r.URL.Query().Get("name"), r.URL.Query().Get("scenario"))
		if name == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "scenario name required: body {\"scenario\":\"router-imbalance\"} or ?name=router-imbalance"})
			return
		}
		reset := body.Reset == nil || *body.Reset
		if v := r.URL.Query().Get("reset"); v == "false" || v == "0" {
			reset = false
		}
		if err := f.Apply(name, reset, time.Now()); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, f.state())
	})
}

// SetTargets records each pod's scrape address and the labels every target carries, for
// GET /admin/targets.
func (f *Fleet) SetTargets(addrs []string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs, f.labels = addrs, labels
}

// target is one entry of Prometheus's HTTP service discovery
// (https://prometheus.io/docs/prometheus/latest/http_sd/).
type target struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// Targets lists the pods as Prometheus's HTTP service discovery reads them: each pod's address
// with its current pod name, so that a rollout shows up as new pods (a pod whose server is
// down stays listed, as a crash-looping pod does).
func (f *Fleet) Targets() []target {
	f.mu.Lock()
	addrs, labels := f.addrs, f.labels
	f.mu.Unlock()
	out := []target{}
	for i, a := range addrs {
		if i >= len(f.Engines) {
			break
		}
		l := map[string]string{"pod": f.Engines[i].PodName()}
		for k, v := range labels {
			l[k] = v
		}
		out = append(out, target{Targets: []string{a}, Labels: l})
	}
	return out
}
