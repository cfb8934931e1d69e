package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/playbooks/fixture"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/triage"
)

// correctionEnv is the app with the real notifier keeping diagnosis records in a memory store.
func correctionEnv(t *testing.T, allowed ...string) (*env, *notifier, *playbooks.Set) {
	t.Helper()
	var rec *notifier
	// The notifier resolves the channel's name at its first post.
	e := newEnv(t, append(allowed, "conversations.list"), func(c *Config, o *appOptions) { o.Records = lateRecords{&rec} })
	n, err := newNotifier(notifierOptions{Config: e.cfg, Store: store.NewMemory(), API: e.app.api, Logger: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	rec = n
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return e, n, set
}

// lateRecords lets the notifier, built after the app (it needs the app's API), serve as the app's recordKeeper.
type lateRecords struct{ n **notifier }

func (l lateRecords) KeepRecord(ctx context.Context, d *playbooks.Diagnosis) {
	(*l.n).KeepRecord(ctx, d)
}
func (l lateRecords) LoadRecord(ctx context.Context, id string) (*playbooks.Record, error) {
	return (*l.n).LoadRecord(ctx, id)
}

// postDiagnosis posts the diagnosis of a recorded fixture through the notifier and returns the
// posted message's Wrong verdict? option values by verdict.
func postDiagnosis(t *testing.T, e *env, n *notifier, set *playbooks.Set, labels map[string]string, values map[string]*float64, fleet playbooks.FleetValues) (*playbooks.Diagnosis, map[string]string) {
	t.Helper()
	pb, ok := set.Match(labels)
	if !ok {
		t.Fatalf("no playbook for %v", labels)
	}
	d := pb.Judge(playbooks.Observation{Values: values, Fleet: fleet, Labels: labels})
	before := len(e.slack.Calls("chat.postMessage"))
	nt := &notify.Notification{GroupKey: fmt.Sprintf("{}:{pod=%q}", labels["pod"]), Status: notify.StatusFiring, Source: notify.SourceAlertmanager,
		Items: []notify.Item{{Alert: template.Alert{Status: notify.StatusFiring, Labels: template.KV(labels), Fingerprint: "fp-" + labels["pod"],
			StartsAt: time.Now().Add(-time.Minute)}, Diagnosis: d}}}
	if _, err := n.Notify(context.Background(), nt); err != nil {
		t.Fatal(err)
	}
	post := e.slack.WaitCalls(t, "chat.postMessage", before+1, 10*time.Second)[before]
	options := map[string]string{}
	for _, b := range post.Blocks() {
		els, _ := b["elements"].([]any)
		for _, el := range els {
			em, _ := el.(map[string]any)
			if em["type"] != "static_select" || em["action_id"] != actionWrongVerdict {
				continue
			}
			opts, _ := em["options"].([]any)
			for _, o := range opts {
				om, _ := o.(map[string]any)
				txt, _ := om["text"].(map[string]any)
				options[txt["text"].(string)] = om["value"].(string)
			}
		}
	}
	if len(options) != len(playbooks.KnownVerdicts)-1 {
		t.Fatalf("the message offers %d verdicts to choose, want every verdict but the one given (%d): %v", len(options), len(playbooks.KnownVerdicts)-1, options)
	}
	if _, ok := options[d.Verdict]; ok {
		t.Fatalf("the select offers the verdict given, %s", d.Verdict)
	}
	return d, options
}

// choose sends a signed block_actions payload of the select, as Slack does.
func (e *env) choose(t *testing.T, value, user string) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "name": "alice"},
		"channel":      map[string]any{"id": "C0INCIDENT"},
		"message":      map[string]any{"ts": "1700000000.000001"},
		"response_url": e.slack.ResponseURL("choice"),
		"actions": []map[string]any{{"action_id": actionWrongVerdict, "block_id": "b", "type": "static_select",
			"selected_option": map[string]any{"text": map[string]any{"type": "plain_text", "text": "x"}, "value": value}}},
	})
	body := url.Values{"payload": {string(payload)}}.Encode()
	if status, _ := e.post(t, "/slack/interactions", body, sign(signingSecret, time.Now(), body)); status != 200 {
		t.Fatalf("choice status %d", status)
	}
}

// runFixture runs `playbooks test` on fixture text: its diff ("" when it passed).
func runFixture(t *testing.T, set *playbooks.Set, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wrong_test.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := fixture.Load(dir)
	if err != nil {
		t.Fatalf("the fixture posted does not load: %v\n%s", err, text)
	}
	res := fixture.Run(set, files)
	if len(res) != 1 {
		t.Fatalf("want one test, got %+v", res)
	}
	return res[0].Diff
}

func f64(v float64) *float64 { return &v }

func TestWrongVerdictAnswersInTheThreadWithAFixtureThatFailsUntilThePlaybookIsFixed(t *testing.T) {
	e, n, set := correctionEnv(t, "chat.postMessage")
	labels := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "llama", "namespace": "prod", "pod": "vllm-0"}
	values := map[string]*float64{"ttft_p99": f64(38), "queue_share": f64(0.94), "queue_mean": f64(21.5), "prefill_mean": f64(0.12),
		"prefill_base": f64(0.11), "waiting": f64(140), "waiting_before": f64(60), "running": f64(64), "kv_peak": f64(0.62), "preemptions": f64(0), "gen_tps": f64(2100)}
	d, options := postDiagnosis(t, e, n, set, labels, values, nil)
	if d.Verdict != playbooks.VerdictCapacityPastKnee {
		t.Fatalf("seed diagnosis is %s", d.Verdict)
	}
	before := len(e.slack.Calls("chat.postMessage"))
	e.choose(t, options[playbooks.VerdictKVPressure], "U1")
	reply := e.slack.WaitCalls(t, "chat.postMessage", before+1, 10*time.Second)[before]
	if reply.Form.Get("thread_ts") != "1700000000.000001" {
		t.Errorf("the fixture is not posted in the thread: %v", reply.Form)
	}
	text := reply.Form.Get("text")
	if !strings.Contains(text, "<@U1> says this is `kv-pressure`, not `capacity-past-knee`") {
		t.Errorf("reply does not say who corrected what: %s", text)
	}
	_, block, ok := strings.Cut(text, "```\n")
	block = strings.TrimSuffix(block, "```")
	if !ok || !strings.Contains(block, "verdict: kv-pressure") || !strings.Contains(block, "pod: vllm-0") || !strings.Contains(block, "waiting_before: 60") {
		t.Fatalf("reply lacks the fixture code block:\n%s", text)
	}
	diff := runFixture(t, set, block)
	if !strings.Contains(diff, "-expected: kv-pressure") || !strings.Contains(diff, "+got:      capacity-past-knee") {
		t.Fatalf("the posted fixture must reproduce capacity-past-knee and fail on kv-pressure, got diff %q", diff)
	}
	if got := counter(e.m.Corrections.WithLabelValues("ttft-p99-high", "capacity-past-knee", "kv-pressure")); got != 1 {
		t.Errorf("corrections counted %v, want 1", got)
	}
	if got := counter(e.m.Interactions.WithLabelValues("wrong_verdict")); got != 1 {
		t.Errorf("interactions counted %v, want 1", got)
	}
}

func TestAFleetsFixtureTooLongForAMessageIsUploadedAsAFileInTheThread(t *testing.T) {
	e, n, set := correctionEnv(t, "chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal")
	labels := map[string]string{"alertname": "VLLMEngineStalled", "model_name": "llama", "namespace": "prod", "pod": "vllm-0"}
	values := map[string]*float64{"waiting": f64(42), "waiting_before": f64(12), "held": f64(12), "progress": f64(0), "running": f64(0), "kv": f64(0),
		"prompt_tps": f64(0), "gen_tps": f64(0), "finished": f64(0)}
	fleet := playbooks.FleetValues{"waiting": {}, "running": {}, "tokens": {}, "stall": {"vllm-0": 12}}
	for i := range 60 {
		pod := fmt.Sprintf("vllm-%d", i)
		fleet["waiting"][pod], fleet["running"][pod], fleet["tokens"][pod] = 1, 10, 2000
	}
	fleet["waiting"]["vllm-0"], fleet["running"]["vllm-0"], fleet["tokens"]["vllm-0"] = 42, 0, 0
	d, options := postDiagnosis(t, e, n, set, labels, values, fleet)
	if d.Verdict != playbooks.VerdictEngineStalled {
		t.Fatalf("seed diagnosis is %s", d.Verdict)
	}
	e.choose(t, options[playbooks.VerdictLoadImbalance], "U2")
	up := e.slack.WaitCalls(t, "upload", 1, 10*time.Second)[0]
	done := e.slack.WaitCalls(t, "files.completeUploadExternal", 1, 10*time.Second)[0]
	if done.Form.Get("thread_ts") != "1700000000.000001" || !strings.Contains(done.Form.Get("initial_comment"), "not `engine-stalled`") {
		t.Errorf("upload not in the thread or without its comment: %v", done.Form)
	}
	fixture := string(up.Body)
	if i := strings.Index(fixture, "# Recorded"); i > 0 { // a multipart body: cut the file out
		fixture = fixture[i:]
		if j := strings.Index(fixture, "\r\n--"); j > 0 {
			fixture = fixture[:j]
		}
	}
	if !strings.Contains(fixture, "vllm-59: 2000") {
		t.Fatalf("the uploaded fixture lacks the fleet's values:\n%.2000s", fixture)
	}
	diff := runFixture(t, set, fixture)
	if !strings.Contains(diff, "-expected: load-imbalance") || !strings.Contains(diff, "+got:      engine-stalled") {
		t.Fatalf("the uploaded fixture must reproduce engine-stalled, got diff %q", diff)
	}
}

func TestAWrongVerdictChoiceTheResponderNeverOfferedIsRefusedAndNotCounted(t *testing.T) {
	e, n, set := correctionEnv(t, "chat.postMessage", "chat.postEphemeral")
	labels := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "llama", "pod": "vllm-1"}
	d, options := postDiagnosis(t, e, n, set, labels, map[string]*float64{}, nil)
	cases := []struct{ name, value, want string }{
		{"an unknown verdict", d.RecordID + "|rm -rf", "not a verdict correction this responder offered"},
		{"a record the responder never kept", strings.Repeat("ab", 16) + "|healthy", "no longer kept"},
		{"an id that is no record id", "slack:thread:x|healthy", "not a verdict correction this responder offered"},
		{"the verdict given", d.RecordID + "|" + d.Verdict, "is the verdict given"},
	}
	_ = options
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.choose(t, c.value, "U3")
			eph := e.slack.WaitCalls(t, "chat.postEphemeral", i+1, 10*time.Second)[i]
			if eph.Form.Get("user") != "U3" || !strings.Contains(eph.Form.Get("text"), c.want) {
				t.Errorf("ephemeral %v, want %q", eph.Form, c.want)
			}
		})
	}
	e.app.Wait()
	if got := len(e.slack.Calls("chat.postMessage")); got != 1 {
		t.Errorf("%d messages posted, want only the diagnosis", got)
	}
	for _, v := range playbooks.KnownVerdicts {
		if got := counter(e.m.Corrections.WithLabelValues("ttft-p99-high", d.Verdict, v)); got != 0 {
			t.Errorf("a refused choice was counted: %s -> %s", d.Verdict, v)
		}
	}
}

// setTriager decides the on-demand triage over fixed values, as a run against Prometheus would.
type setTriager struct{ set *playbooks.Set }

func (s setTriager) Triage(_ context.Context, labels map[string]string) (*triage.Result, error) {
	return &triage.Result{Diagnosis: s.set.Triage().Judge(playbooks.Observation{Values: map[string]*float64{}, Labels: labels})}, nil
}

func TestAnOnDemandTriageOffersWrongVerdictAndItsChoiceAnswersWithTheFixture(t *testing.T) {
	var rec *notifier
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, []string{"response", "chat.postMessage"}, func(_ *Config, o *appOptions) {
		o.Records, o.Triager = lateRecords{&rec}, setTriager{set}
	})
	if rec, err = newNotifier(notifierOptions{Config: e.cfg, Store: store.NewMemory(), API: e.app.api, Logger: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	e.command(t, "triage llama vllm-0", "U1")
	raw := string(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
	i := strings.Index(raw, `|healthy"`)
	if !strings.Contains(raw, `"action_id":"`+actionWrongVerdict+`"`) || i < 32 {
		t.Fatalf("the on-demand diagnosis has no Wrong verdict? select: %s", raw)
	}
	e.choose(t, raw[i-32:i]+"|healthy", "U1")
	reply := e.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)[0].Form.Get("text")
	if !strings.Contains(reply, "playbook: triage") || !strings.Contains(reply, "verdict: healthy") || !strings.Contains(reply, "not `no-data`") {
		t.Errorf("reply %s", reply)
	}
}
