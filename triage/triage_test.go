package triage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// newService is on-demand triage of the built-in playbooks on the Prometheus at url.
func newService(t *testing.T, url string) *Service {
	t.Helper()
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	naming := vllmnames.Default()
	set, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{Naming: &naming})
	if err != nil {
		t.Fatal(err)
	}
	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	q := evidence.PrometheusQuerier{API: v1.NewAPI(client)}
	s, err := New(Options{Set: set, Engine: evidence.NewEngine(q, evidence.EngineOptions{Naming: naming, Logger: zerolog.Nop()}),
		Querier: q, Naming: naming, PrometheusURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func load(pod, model string, f func(*testenv.VLLMLoad)) testenv.VLLMLoad {
	l := testenv.HealthyLoad
	l.Pod, l.Model = pod, model
	if f != nil {
		f(&l)
	}
	return l
}

// kvPreemption is a pod whose KV cache is full and preempts; pastKnee one whose queue is deep.
func kvPreemption(l *testenv.VLLMLoad) {
	l.KV, l.PreemptionRate, l.Running, l.Waiting, l.Decode, l.ITL = 0.99, 2, 120, 20, 30, 0.06
}

func pastKnee(l *testenv.VLLMLoad) {
	l.TTFT, l.Queue, l.Waiting, l.Running, l.KV = 35, 34, 140, 64, 0.6
}

// aboutOneModel fails unless the diagnosis is about model end to end: its scope, every evidence
// query, the fleet's siblings and focus pod.
func aboutOneModel(t *testing.T, d *playbooks.Diagnosis, model string, pods []string) {
	t.Helper()
	if d.Scope["model_name"] != model {
		t.Errorf("scope %v; want model_name=%s", d.Scope, model)
	}
	for _, ev := range d.Evidence {
		if !strings.Contains(ev.Query, fmt.Sprintf("model_name=%q", model)) {
			t.Errorf("evidence %s queries every model: %s", ev.Name, ev.Query)
		}
	}
	if d.Fleet == nil {
		t.Fatal("no fleet view")
	}
	if d.Fleet.Siblings["model_name"] != model || !slices.Contains(pods, d.Fleet.Focus) || d.Fleet.Pods != len(pods) {
		t.Errorf("fleet siblings %v, focus %s of %d pods; want model_name=%s, one of %v", d.Fleet.Siblings, d.Fleet.Focus, d.Fleet.Pods, model, pods)
	}
}

// A triage that names no model and no pod, on a Prometheus holding two models, is about one
// model end to end: the one with the problem (here a full KV cache that preempts), named, with
// the other listed beside its verdict. Before, it summed both models' series into one diagnosis
// and named a pod of the other model as the worst.
func TestATriageWithoutAModelIsAboutOneModelEndToEnd(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{
		load("alpha-0", "alpha", nil), load("alpha-1", "alpha", nil), load("alpha-2", "alpha", nil),
		load("beta-0", "beta", kvPreemption), load("beta-1", "beta", nil),
	})
	s := newService(t, prom.URL)

	t.Run("no model, no pod: the model with the problem, the other listed", func(t *testing.T) {
		res, err := s.Run(context.Background(), Request{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != playbooks.VerdictKVPreemption {
			t.Errorf("verdict %s; want kv-preemption", res.Verdict)
		}
		aboutOneModel(t, res.Diagnosis, "beta", []string{"beta-0", "beta-1"})
		want := []Model{{Name: "beta", Namespace: "llm", Verdict: playbooks.VerdictKVPreemption, Diagnosed: true},
			{Name: "alpha", Namespace: "llm", Verdict: playbooks.VerdictHealthy}}
		if len(res.Models) != 2 || res.Models[0].Name != want[0].Name || res.Models[0].Verdict != want[0].Verdict || !res.Models[0].Diagnosed ||
			res.Models[1].Name != want[1].Name || res.Models[1].Verdict != want[1].Verdict || res.Models[1].Diagnosed {
			t.Errorf("models %+v; want %+v", res.Models, want)
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], `this diagnosis is about model_name="beta" namespace="llm"`) ||
			!strings.Contains(res.Notes[0], `the others: model_name="alpha" namespace="llm" (healthy)`) {
			t.Errorf("the first note does not name the model and the other: %q", res.Notes)
		}
		b, err := res.JSON()
		if err != nil || !strings.Contains(string(b), `"models": [`) {
			t.Errorf("the JSON has no models list: %v\n%s", err, b)
		}
	})

	t.Run("the model named: no choosing, no note", func(t *testing.T) {
		res, err := s.Run(context.Background(), Request{Labels: map[string]string{"model_name": "alpha"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != playbooks.VerdictHealthy || res.Models != nil {
			t.Errorf("verdict %s, models %+v; want healthy and no list", res.Verdict, res.Models)
		}
		aboutOneModel(t, res.Diagnosis, "alpha", []string{"alpha-0", "alpha-1", "alpha-2"})
		for _, n := range res.Notes {
			if strings.Contains(n, "named no model") {
				t.Errorf("a note about choosing a model: %q", n)
			}
		}
	})

	t.Run("a pod named: its own model from its own series, no choosing", func(t *testing.T) {
		res, err := s.Run(context.Background(), Request{Labels: map[string]string{"pod": "alpha-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Models != nil || res.Scope["model_name"] != "alpha" || res.Scope["pod"] != "alpha-1" {
			t.Errorf("scope %v, models %+v; want the pod and its model", res.Scope, res.Models)
		}
		aboutOneModel(t, res.Diagnosis, "alpha", []string{"alpha-0", "alpha-1", "alpha-2"})
	})

	t.Run("an alert's playbook without a model chooses alike", func(t *testing.T) {
		res, err := s.Run(context.Background(), Request{Alert: "VLLMKVCacheNearFull"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Playbook != "kv-cache-near-full" || res.Scope["model_name"] != "beta" {
			t.Errorf("playbook %s, scope %v; want kv-cache-near-full on beta", res.Playbook, res.Scope)
		}
	})
}

// With one model in the scope the triage is scoped to it, and says so.
func TestATriageWithoutAModelOnOneModelIsScopedToIt(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{load("solo-0", "solo", pastKnee), load("solo-1", "solo", nil)})
	res, err := newService(t, prom.URL).Run(context.Background(), Request{})
	if err != nil {
		t.Fatal(err)
	}
	aboutOneModel(t, res.Diagnosis, "solo", []string{"solo-0", "solo-1"})
	if res.Models != nil || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], `model_name="solo" namespace="llm", the only model in scope`) {
		t.Errorf("models %+v, notes %q; want no list and a note naming the model", res.Models, res.Notes)
	}
}

// More models than it diagnoses to choose from: it asks for one, naming them.
func TestATriageWithoutAModelAmongTooManyAsksForOne(t *testing.T) {
	t.Parallel()
	var loads []testenv.VLLMLoad
	for i := range maxModels + 1 {
		loads = append(loads, load(fmt.Sprintf("m%02d-0", i), fmt.Sprintf("m%02d", i), nil))
	}
	prom := testenv.RecordedPrometheus(t, loads)
	s := newService(t, prom.URL)
	_, err := s.Run(context.Background(), Request{})
	if err == nil || !strings.HasPrefix(err.Error(), "11 models in scope and the request names none: name one (model_name): ") ||
		!strings.Contains(err.Error(), `model_name="m00" namespace="llm"`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v; want one line asking for a model", err)
	}
	if _, err := s.Run(context.Background(), Request{Labels: map[string]string{"model_name": "m03"}}); err != nil {
		t.Fatalf("a model named among many: %v", err)
	}
}

// Prometheus unreachable, whether listing the models or running the playbook: one line naming
// the server and the reason.
func TestPrometheusUnreachableIsOneLineNamingTheServer(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	s := newService(t, url)
	for _, labels := range []map[string]string{{}, {"pod": "vllm-0"}} {
		_, err := s.Run(context.Background(), Request{Labels: labels})
		want := "Prometheus at " + url + " unreachable: "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "\n") {
			t.Errorf("labels %v: error %v; want one line starting %q", labels, err, want)
		}
	}
}

// Errors before anything runs: an alert no playbook matches, a bad label name.
func TestRequestsThatCannotRunAreRefusedBeforeAnyQuery(t *testing.T) {
	t.Parallel()
	s := newService(t, "http://127.0.0.1:1")
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"an unknown alert", Request{Alert: "NoSuchAlert"}, `no playbook matches alert "NoSuchAlert" (known: VLLMEngineStalled, `},
		{"a label name PromQL cannot carry", Request{Labels: map[string]string{"bad-name": "x"}}, `label "bad-name": not a label name`},
		{"a model name of 16 KiB", Request{Labels: map[string]string{"model_name": strings.Repeat("m", 16<<10)}},
			`label "model_name": value too long (16384 bytes, at most 253)`},
		{"an alert name past the bound", Request{Alert: strings.Repeat("A", 254)}, `label "alertname": value too long (254 bytes, at most 253)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Run(context.Background(), tc.req); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
		})
	}
	// The hard negative: a value of the bound is sent (and meets the unreachable Prometheus).
	_, err := s.Run(context.Background(), Request{Labels: map[string]string{"pod": strings.Repeat("p", promql.MaxLabelValue)}})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("a value of the bound: %v; want it sent to Prometheus", err)
	}
}

func TestParseAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ in, want string }{
		{"2026-05-27T10:30:00Z", "2026-05-27T10:30:00Z"},
		{"2026-05-27T12:30:00+02:00", "2026-05-27T10:30:00Z"},
		{"2026-05-27T10:30:00.5Z", "2026-05-27T10:30:00.5Z"},
		{"1779877800", "2026-05-27T10:30:00Z"},
		{"1779877800.25", "2026-05-27T10:30:00.25Z"},
		{"2026-05-27T12:00:30Z", "2026-05-27T12:00:30Z"}, // within the clock-skew allowance
	} {
		got, err := ParseAt(tc.in, now)
		if err != nil || got.UTC().Format(time.RFC3339Nano) != tc.want {
			t.Errorf("ParseAt(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"yesterday", "2026-05-27T12:02:00Z", "-5", "NaN", "1e30", ""} {
		if _, err := ParseAt(in, now); err == nil {
			t.Errorf("ParseAt(%q) took it", in)
		}
	}
}

func TestOneLineKeepsEachJoinedErrorsFirstLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"one error", errors.New("prometheus.url: required"), "prometheus.url: required"},
		{"joined errors, each kept", errors.Join(errors.New("c.yaml: listen: required"), errors.New("c.yaml: log.level: loud")),
			"c.yaml: listen: required; c.yaml: log.level: loud"},
		{"what follows a first line is dropped", errors.New("unreachable: refused\ngoroutine 1 [running]:"), "unreachable: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OneLine(tc.err); got != tc.want {
				t.Fatalf("OneLine = %q; want %q", got, tc.want)
			}
		})
	}
}

// The order among models: a named problem, then an unexplained one, then healthy, then no data.
func TestSeverityPutsANamedProblemFirst(t *testing.T) {
	t.Parallel()
	order := []string{playbooks.VerdictEngineStalled, playbooks.VerdictInconclusive, playbooks.VerdictHealthy, playbooks.VerdictNoData}
	for i := 1; i < len(order); i++ {
		if severity(order[i-1]) >= severity(order[i]) {
			t.Errorf("%s does not come before %s", order[i-1], order[i])
		}
	}
}

// Issue 33.1: a pod named without its model is compared with its own model's pods, never with
// every pod of the namespace. An overloaded model's only pod beside another model's idle pod read
// load-imbalance ("the other pods of the model have at most 0 waiting"); scoped to its own model
// (from its own series) it is past the knee, as the same triage naming the model says.
func TestAPodNamedWithoutItsModelIsComparedWithItsOwnModelsPods(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{
		load("big-0", "big", pastKnee), load("lora-0", "lora", nil),
		// The same pod name in two namespaces, each serving its own model.
		load("twin-0", "alpha", func(l *testenv.VLLMLoad) { l.Namespace = "team-a" }),
		load("twin-0", "beta", func(l *testenv.VLLMLoad) { l.Namespace = "team-b"; kvPreemption(l) }),
	})
	s := newService(t, prom.URL)
	run := func(labels map[string]string) *Result {
		t.Helper()
		res, err := s.Run(context.Background(), Request{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	named := run(map[string]string{"model_name": "big", "pod": "big-0"})
	for _, labels := range []map[string]string{{"pod": "big-0"}, {"pod": "big-0", "namespace": "llm"}} {
		res := run(labels)
		if res.Verdict != named.Verdict || res.Verdict == playbooks.VerdictLoadImbalance {
			t.Errorf("%v: verdict %s; want %s, as with the model named", labels, res.Verdict, named.Verdict)
		}
		if res.Scope["model_name"] != "big" || res.Scope["pod"] != "big-0" || res.Models != nil {
			t.Errorf("%v: scope %v, models %+v; want the pod's model joined to the scope", labels, res.Scope, res.Models)
		}
		if res.Fleet == nil || res.Fleet.Pods != 1 || res.Fleet.Siblings["model_name"] != "big" {
			t.Errorf("%v: fleet %+v; want the model's one pod", labels, res.Fleet)
		}
		if len(res.Notes) == 0 || !strings.Contains(res.Notes[0], `the request named pod "big-0" and no model: this diagnosis is about model_name="big"`) {
			t.Errorf("%v: notes %q; want the first to name the pod's model", labels, res.Notes)
		}
	}

	t.Run("two models on one pod name: said, the most severe diagnosed", func(t *testing.T) {
		res := run(map[string]string{"pod": "twin-0"})
		if res.Verdict != playbooks.VerdictKVPreemption || res.Scope["model_name"] != "beta" || res.Scope["namespace"] != "team-b" {
			t.Errorf("verdict %s, scope %v; want kv-preemption on beta in team-b", res.Verdict, res.Scope)
		}
		if len(res.Models) != 2 || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], `pod "twin-0" has series of 2 models`) ||
			!strings.Contains(res.Notes[0], `the others: model_name="alpha" namespace="team-a" (healthy)`) {
			t.Errorf("models %+v, notes %q; want both listed and the first note saying so", res.Models, res.Notes)
		}
	})
	t.Run("the pod and its namespace named: the one model there", func(t *testing.T) {
		res := run(map[string]string{"pod": "twin-0", "namespace": "team-a"})
		if res.Verdict != playbooks.VerdictHealthy || res.Scope["model_name"] != "alpha" || res.Models != nil {
			t.Errorf("verdict %s, scope %v, models %+v; want alpha alone, healthy", res.Verdict, res.Scope, res.Models)
		}
	})
}

// triage.namespaces bounds what a triage reads: a request naming another namespace is refused, and
// one naming none is about the models of the bound only, every query scoped to its namespace.
// Without it (the test above) the same requests read every namespace.
func TestTriageNamespacesBoundWhatATriageReads(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{
		load("twin-0", "alpha", func(l *testenv.VLLMLoad) { l.Namespace = "team-a" }),
		load("twin-0", "beta", func(l *testenv.VLLMLoad) { l.Namespace = "team-b"; kvPreemption(l) }),
		load("gamma-0", "gamma", func(l *testenv.VLLMLoad) { l.Namespace = "team-b" }),
	})
	s := newService(t, prom.URL)
	s.o.Namespaces = []string{"team-a"}
	inTeamA := func(t *testing.T, res *Result) {
		t.Helper()
		if res.Scope["namespace"] != "team-a" || res.Scope["model_name"] != "alpha" || res.Models != nil {
			t.Errorf("scope %v, models %+v; want alpha in team-a alone", res.Scope, res.Models)
		}
		for _, ev := range res.Evidence {
			if !strings.Contains(ev.Query, `namespace="team-a"`) {
				t.Errorf("evidence %s reads outside team-a: %s", ev.Name, ev.Query)
			}
		}
	}
	for _, labels := range []map[string]string{{}, {"pod": "twin-0"}, {"model_name": "alpha"}} {
		res, err := s.Run(context.Background(), Request{Labels: labels})
		if err != nil {
			t.Fatalf("%v: %v", labels, err)
		}
		inTeamA(t, res)
		if len(labels) > 0 && res.Verdict == playbooks.VerdictKVPreemption {
			t.Errorf("%v: verdict %s; want alpha's, not team-b's beta", labels, res.Verdict)
		}
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"namespace": "team-b"}, `namespace "team-b": triage reads only team-a (triage.namespaces)`},
		{map[string]string{"model_name": "gamma"}, "no vLLM series of this scope in the namespaces triage reads (triage.namespaces: team-a)"},
		{map[string]string{"pod": "gamma-0"}, "no vLLM series of this scope in the namespaces triage reads (triage.namespaces: team-a)"},
	} {
		if _, err := s.Run(context.Background(), Request{Labels: tc.labels}); err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v; want %q", tc.labels, err, tc.want)
		}
	}
}
