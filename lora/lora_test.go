package lora_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/lora"
)

// series is one vllm:lora_requests_info series as vLLM 0.32 exports it: the state in the labels
// (already escaped for the exposition), the value the time it was last reported.
type series struct {
	max, running string
	age          time.Duration
}

// exposition writes the family under name as vLLM 0.32 does (waiting_lora_adapters equal to
// running_lora_adapters: docs/vllm-facts.md, "LoRA").
func exposition(name string, ss ...series) func(time.Time) string {
	return func(now time.Time) string {
		var b strings.Builder
		fmt.Fprintf(&b, "# HELP %s Running stats on lora requests.\n# TYPE %s gauge\n", name, name)
		for _, s := range ss {
			fmt.Fprintf(&b, "%s{max_lora=\"%s\",running_lora_adapters=\"%s\",waiting_lora_adapters=\"%s\"} %.3f\n",
				name, s.max, s.running, s.running, float64(now.Add(-s.age).UnixMilli())/1000)
		}
		b.WriteString("# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
		b.WriteString("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0\n")
		return b.String()
	}
}

// Against a real Prometheus scraping one stand-in vLLM per pod: the newest series of the pod
// wins, never another pod's; no series is unknown; label values a message must not carry as
// they are.
func TestLoRAFactsAreTheNewestSeriesOfThePod(t *testing.T) {
	const hostilePod = `we"ird\pod`
	pods := []struct {
		ns, pod string
		body    func(time.Time) string
	}{
		// three label sets ever seen: the adapters a while ago, idle, and four adapters now
		// (after a restart with a larger --max-loras)
		{"lora", "three-sets", exposition("vllm:lora_requests_info",
			series{"2", "a,b", 10 * time.Minute}, series{"4", "", 5 * time.Minute}, series{"4", "a,b,c,d", 2 * time.Second})},
		// its sibling in the namespace reported later and runs another adapter: not three-sets'
		{"lora", "sibling", exposition("vllm:lora_requests_info", series{"8", "z", 0})},
		// served no request since it started: the family has no series
		{"lora", "no-series", exposition("vllm:lora_requests_info")},
		// hostile values: a pod name that needs quoting; max_lora no count; adapter names with a
		// quote, a backslash, a newline, a template, non-ASCII, empty names and 20 of them
		{"lora", hostilePod, exposition("vllm:lora_requests_info",
			series{"NaN", `we\"ird,back\\slash,new\nline,{{ .x }},ü-名,, ,` + strings.Repeat("n,", 15), time.Second})},
		{"lora", "minus", exposition("vllm:lora_requests_info", series{"-1", "a", time.Second})},
		// KServe renames the family (vllm.metric_prefix)
		{"kserve", "kserve-pod", exposition("kserve_vllm:lora_requests_info", series{"2", "x,y", time.Second})},
	}
	var targets []testenv.Target
	for _, p := range pods {
		x := testenv.ServeExposition(t, p.body)
		targets = append(targets, testenv.Target{Addr: x.Addr, Labels: map[string]string{"namespace": p.ns, "pod": p.pod}})
	}
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: targets})
	client, _ := api.NewClient(api.Config{Address: prom.URL})
	papi := v1.NewAPI(client)
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape every stand-in", func() bool {
		v, _, _, err := papi.Query(context.Background(), `count(vllm:num_requests_running) == 6 and on () count({__name__=~".*lora_requests_info"}) == 7`, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1
	})
	at := time.Now()
	look := func(n vllmnames.Naming, ns, pod string) *facts.Facts {
		ps := fmt.Sprintf(`namespace=%q,pod=%q`, ns, pod)
		r := lora.Lookup(context.Background(), testenv.Asker(t, prom.URL, at), n.Selector(lora.Metric, ps))
		if r.Problem != "" {
			t.Fatalf("%s/%s: %s (%s)", ns, pod, r.Problem, r.Query)
		}
		return r.Facts()
	}
	str := func(f *facts.Facts) string {
		num := func(name string) string {
			if v := f.Number(name); v != nil {
				return fmt.Sprint(*v)
			}
			return "unknown"
		}
		return fmt.Sprintf("max %s, running %s: %q", num("lora_max"), num("lora_running"), f.Label("lora_running_adapters"))
	}
	for _, tc := range []struct {
		name    string
		naming  vllmnames.Naming
		ns, pod string
		want    string
	}{
		{"of several label sets the newest wins, not another pod's", vllmnames.Default(), "lora", "three-sets", `max 4, running 4: "a, b, c, d"`},
		{"the sibling's own", vllmnames.Default(), "lora", "sibling", `max 8, running 1: "z"`},
		{"no series: unknown", vllmnames.Default(), "lora", "no-series", `max unknown, running unknown: ""`},
		{"a pod that is not there: unknown", vllmnames.Default(), "lora", "gone", `max unknown, running unknown: ""`},
		{"hostile values: max_lora no count is unknown, names without control characters, 16 named", vllmnames.Default(), "lora", hostilePod,
			`max unknown, running 20: "we\"ird, back\\slash, newline, {{ .x }}, ü-名, n, n, n, n, n, n, n, n, n, n, n and 4 more"`},
		{"a negative max_lora is unknown", vllmnames.Default(), "lora", "minus", `max unknown, running 1: "a"`},
		{"renamed by the metric prefix", vllmnames.Naming{Prefix: "kserve_vllm:"}, "kserve", "kserve-pod", `max 2, running 2: "x, y"`},
		{"under vLLM's names a renamed family is not found", vllmnames.Default(), "kserve", "kserve-pod", `max unknown, running unknown: ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := look(tc.naming, tc.ns, tc.pod)
			if got := str(f); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !f.Looked(lora.SourceName) {
				t.Errorf("sources %v", f.Sources)
			}
		})
	}
}

// A query Prometheus refuses is a problem said, every fact unknown.
func TestALoRAQueryThatFailsSaysSo(t *testing.T) {
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		return facts.Answer{Problems: map[string]string{qs[0].Name: "bad_data: parse error"}}
	}
	r := lora.Lookup(context.Background(), ask, `vllm:lora_requests_info{pod="p"}`)
	if r.Found || r.Facts().Number("lora_max") != nil || len(r.Notes()) != 1 || !strings.Contains(r.Notes()[0], "parse error") {
		t.Errorf("report %+v, notes %v", r, r.Notes())
	}
	if r.Query != `topk(1, vllm:lora_requests_info{pod="p"})` {
		t.Errorf("query %s", r.Query)
	}
}
