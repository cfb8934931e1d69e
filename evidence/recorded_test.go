package evidence

import (
	"context"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// stallLoads are the pods of one model whose engines stop, sleep, restart or serve
// (testenv.ProgressLoads, as cmd/responder's progress test records them).
func stallLoads() []testenv.VLLMLoad { return testenv.ProgressLoads("r", "llama-r") }

// shippedRules is the committed production rules file (its stall history is evaluated every
// 15 s).
func shippedRules(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "deploy", "prometheus", "vllm-alerts.rules.yml")
}

// sentQuerier is a Querier that keeps the requests sent.
type sentQuerier struct {
	Querier
	mu   sync.Mutex
	sent []string
}

func (s *sentQuerier) Query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	s.mu.Lock()
	s.sent = append(s.sent, q)
	s.mu.Unlock()
	return s.Querier.Query(ctx, q, ts)
}

// On a real Prometheus that ran the shipped recording rules over the recorded history, the
// recorded forms say what the raw forms say, for every pod of a model whose engines stop, sleep,
// restart or serve: the same verdict for every pod's TTFT alert and for triage of the model, the
// stall history (stalled_recent, stalled_for) within 30 s (the rules' 15 s interval and a scrape
// interval), the restarts (start_changes, the fleet's restarts) the same, and the recorded forms
// are the ones sent. Without the rules the raw forms are sent, and say the same.
func TestTheRecordedFormsSayWhatTheRawFormsSay(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheusWithRules(t, stallLoads(), shippedRules(t))
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	// Where the recorded history ends: the rules' series were backfilled up to there.
	at := prom.RecordedUntil
	set := builtinSet(t)
	ttft, _ := set.Get("ttft-p99-high")
	run := func(p *playbooks.Playbook, labels map[string]string, recorded bool) (*playbooks.Diagnosis, []string) {
		q := &sentQuerier{Querier: PrometheusQuerier{API: v1.NewAPI(client)}}
		opt := EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}
		if recorded {
			opt.Alternatives = Recorded
		}
		d, err := NewEngine(q, opt).RunAt(context.Background(), p, labels, at)
		if err != nil {
			t.Fatal(err)
		}
		return d, q.sent
	}
	sentRecorded := func(sent []string) bool {
		for _, s := range sent {
			if strings.Contains(s, "engine:vllm_stall_held:1m{") && strings.Contains(s, "[15m:5s]") {
				return true
			}
		}
		return false
	}
	sentRestarts := func(sent []string) (n int) {
		for _, s := range sent {
			n += strings.Count(s, "changes(target:process_start_time_seconds:vllm{")
		}
		return n
	}
	for _, l := range stallLoads() {
		t.Run(l.Pod, func(t *testing.T) {
			labels := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "r", "model_name": "llama-r", "pod": l.Pod}
			raw, rawSent := run(ttft, labels, false)
			rec, recSent := run(ttft, labels, true)
			if sentRecorded(rawSent) || !sentRecorded(recSent) {
				t.Fatalf("recorded form sent without the alternatives %v, with them %v", sentRecorded(rawSent), sentRecorded(recSent))
			}
			// both (start_changes, the fleet's restarts); for a pod younger than the window, whose
			// own check finds no record of it a window ago, the fleet's only
			want := 2
			if l.StartAt > 0 {
				want = 1
			}
			if n, m := sentRestarts(rawSent), sentRestarts(recSent); n != 0 || m != want {
				t.Fatalf("the restarts' recorded forms sent %d times without the alternatives, %d with them; want 0 and %d", n, m, want)
			}
			if raw.Verdict != rec.Verdict || raw.Title != rec.Title {
				t.Errorf("raw: %s (%s); recorded: %s (%s)", raw.Verdict, raw.Title, rec.Verdict, rec.Title)
			}
			if r, c := raw.Record.Values["start_changes"], rec.Record.Values["start_changes"]; r == nil || c == nil || *r != *c {
				t.Errorf("start_changes: raw %v, recorded %v", fmtValue(r), fmtValue(c))
			}
			if r, c := raw.Record.Fleet["restarts"], rec.Record.Fleet["restarts"]; !maps.Equal(r, c) {
				t.Errorf("the fleet's restarts: raw %v, recorded %v", r, c)
			}
			if l.RestartAt > 0 && (raw.Record.Values["start_changes"] == nil || *raw.Record.Values["start_changes"] != 1) {
				t.Errorf("%s restarted: start_changes %v, want 1", l.Pod, fmtValue(raw.Record.Values["start_changes"]))
			}
			for _, name := range []string{"stalled_recent", "stalled_for"} {
				r, c := raw.Record.Fleet[name], rec.Record.Fleet[name]
				for key, rv := range r {
					if math.Abs(rv-c[key]) > 30 || (c[key] == 0) != (rv == 0) {
						t.Errorf("%s of %s: raw %.0f s, recorded %.0f s", name, key, rv, c[key])
					}
				}
				for key, cv := range c {
					if _, ok := r[key]; !ok {
						t.Errorf("%s of %s: recorded %.0f s, raw none", name, key, cv)
					}
				}
			}
			key := "r/" + l.Pod + "#0"
			if strings.HasPrefix(l.Pod, "stopped") || l.Pod == "recovered" || l.Pod == "hung" {
				if raw.Record.Fleet["stalled_recent"][key] < 60 || rec.Record.Fleet["stalled_recent"][key] < 60 {
					t.Errorf("%s: stalled_recent raw %v, recorded %v; want a stall of a minute at least", key,
						raw.Record.Fleet["stalled_recent"][key], rec.Record.Fleet["stalled_recent"][key])
				}
			}
			t.Logf("%s: stalled_recent raw %v recorded %v; stalled_for raw %v recorded %v", raw.Verdict,
				raw.Record.Fleet["stalled_recent"][key], rec.Record.Fleet["stalled_recent"][key],
				raw.Record.Fleet["stalled_for"][key], rec.Record.Fleet["stalled_for"][key])
		})
	}
	t.Run("triage of the model", func(t *testing.T) {
		labels := map[string]string{"namespace": "r", "model_name": "llama-r"}
		raw, _ := run(set.Triage(), labels, false)
		rec, _ := run(set.Triage(), labels, true)
		if raw.Verdict != rec.Verdict || raw.Title != rec.Title {
			t.Errorf("raw: %s (%s); recorded: %s (%s)", raw.Verdict, raw.Title, rec.Verdict, rec.Title)
		}
	})
	// One evaluation of the stall history for every playbook of a model: it travels in a request
	// of its own, the same PromQL for the TTFT, the queue and the KV playbooks and for triage,
	// so within the cache's life it is sent once (and the check once).
	t.Run("the stall history is one request for every playbook of a model", func(t *testing.T) {
		q := &sentQuerier{Querier: PrometheusQuerier{API: v1.NewAPI(client)}}
		// (a cache that outlives the four runs however busy the machine)
		e := NewEngine(q, EngineOptions{CacheTTL: time.Hour, Logger: zerolog.Nop(), Alternatives: Recorded})
		for _, name := range []string{"ttft-p99-high", "queue-depth-high", "kv-cache-near-full"} {
			p, _ := set.Get(name)
			if _, err := e.RunAt(context.Background(), p, map[string]string{"namespace": "r", "model_name": "llama-r", "pod": "stopped-75s"}, at); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.RunAt(context.Background(), set.Triage(), map[string]string{"namespace": "r", "model_name": "llama-r"}, at); err != nil {
			t.Fatal(err)
		}
		history, checks := 0, 0
		for _, s := range q.sent {
			switch {
			case strings.Contains(s, "engine:vllm_stall_held:1m{") && strings.Contains(s, "[15m:5s]"):
				history++
			case strings.HasPrefix(s, "group(engine:vllm_stall_held:1m{"):
				checks++
			}
		}
		if history != 1 || checks != 1 {
			t.Errorf("the stall history sent %d times, its check %d times, for four playbooks of one model; want once each", history, checks)
		}
	})
	// A model the rules have not recorded (the check finds no series): the raw form.
	t.Run("a model without the rules' series", func(t *testing.T) {
		q := &sentQuerier{Querier: PrometheusQuerier{API: v1.NewAPI(client)}}
		_, err := NewEngine(q, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop(), Alternatives: Recorded}).
			RunAt(context.Background(), ttft, map[string]string{"namespace": "r", "model_name": "not-recorded", "pod": "x"}, at)
		if err != nil {
			t.Fatal(err)
		}
		if sentRecorded(q.sent) || sentRestarts(q.sent) > 0 {
			t.Errorf("a recorded form was sent for a model the rules never recorded")
		}
	})
}

// fmtValue is a value or "none".
func fmtValue(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}
