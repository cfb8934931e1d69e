package notify

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	texttemplate "text/template"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/internal/golden"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// startTS is when the test alerts started (t0, fanout_test.go, is when they are notified).
var startTS = t0.Add(-10 * time.Minute)

func f(v float64) *float64 { return &v }

func viewAlert(pod, status string) template.Alert {
	a := template.Alert{
		Status: status,
		Labels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "meta-llama/Llama-3.1-8B-Instruct",
			"namespace": "llm", "pod": pod, "severity": "page"},
		Annotations:  map[string]string{"summary": "TTFT p99 above 2s", "runbook_url": "https://runbooks.example/ttft"},
		StartsAt:     startTS,
		GeneratorURL: "http://prometheus.example/graph?g0.expr=vllm%3Atime_to_first_token_seconds",
		Fingerprint:  "fp-" + pod,
	}
	if status == StatusResolved {
		a.EndsAt = t0.Add(13 * time.Minute)
	}
	return a
}

func viewDiagnosis(verdict, pod string) *playbooks.Diagnosis {
	return &playbooks.Diagnosis{
		Playbook: "ttft-p99-high", Verdict: verdict, Title: "Capacity, past the knee: add replicas",
		Summary: "140 requests waiting (60 one window ago) and queueing is 97.1% of TTFT; 64 running, no preemption.",
		Actions: []string{"Add replicas (or raise the HPA ceiling)", "Shed load at the router"},
		Evidence: []playbooks.Evidence{
			{Name: "ttft_p99", Title: "TTFT p99", Value: f(40), Unit: "s", Text: "40 s"},
			{Name: "prefill_mean", Title: "Prefill time mean", Value: f(0.1), Text: "100 ms", Baseline: f(0.1), BaselineText: "100 ms"},
			{Name: "queue_base", Title: "Queue a day ago", Value: f(3), Text: "3", BaselineText: "no history for a baseline"},
			{Name: "kube_hpa", Title: "HorizontalPodAutoscaler", Label: "llama", Text: "llama"},
			{Name: "preemptions", Title: "Preemptions", Text: "n/a", Problem: "no series"},
		},
		Scope:       map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm", "pod": pod, "engine": "0"},
		EvaluatedAt: t0,
	}
}

func viewItem(verdict, pod string) Item {
	return Item{Alert: viewAlert(pod, StatusFiring), Diagnosis: viewDiagnosis(verdict, pod)}
}

func viewNotification(status string, items ...Item) *Notification {
	return &Notification{
		GroupKey: `{}:{alertname="VLLMTimeToFirstTokenP99High"}`, Status: status, Receiver: "vllm-responder",
		ExternalURL:  "http://alertmanager.example",
		GroupLabels:  map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		CommonLabels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "meta-llama/Llama-3.1-8B-Instruct"},
		Items:        items, Source: SourceAlertmanager, ReceivedAt: t0,
	}
}

// richItem has everything a diagnosis can show: fleet with data-parallel engines and roles,
// slowest requests, notes, missing values, an offered profile.
func richItem() Item {
	it := viewItem(playbooks.VerdictCapacityPastKnee, "vllm-0")
	d := it.Diagnosis
	d.Fleet = &playbooks.FleetView{By: "pod", Focus: "vllm-0", Pods: 3, Affected: 3, Scope: "every pod of the model",
		Siblings: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm"},
		Columns:  []playbooks.FleetColumn{{Name: "waiting", Title: "waiting"}, {Name: "ttft", Title: "TTFT p99"}},
		Rows: []playbooks.FleetRow{
			{Pod: "vllm-0", Role: "decode", Texts: []string{"140", "40 s"}, Focus: true, Affected: true},
			{Pod: "vllm-1", Texts: []string{"130", "38 s"}, Affected: true},
			{Pod: "vllm-2", Texts: []string{"12", "1 s"}},
		},
		Ranks: []playbooks.FleetRow{{Pod: "1", Texts: []string{"100", "41 s"}}, {Pod: "0", Texts: []string{"40", "39 s"}}}}
	d.SlowestRequests = &traces.Report{Service: "vllm-llama-8b", Operation: "llm_request", MinDuration: time.Second, Searched: 42,
		Summary:    "the 2 slowest requests spent 92% of their time queued",
		SearchLink: "https://jaeger.example/search?service=vllm-llama-8b&operation=llm_request",
		Requests: []traces.Request{
			{TraceID: "a1", RequestID: "cmpl-1", Duration: 41 * time.Second, Queue: 38 * time.Second, Prefill: 2 * time.Second, Decode: time.Second,
				PromptTokens: 900, CompletionTokens: 120, Link: "https://jaeger.example/trace/a1"},
			{TraceID: "b2", Duration: 39 * time.Second, Queue: 36 * time.Second, Prefill: 2 * time.Second, Decode: time.Second,
				PromptTokens: 800, CompletionTokens: 100, Link: "https://jaeger.example/trace/b2"},
		}}
	d.Missing = []string{"preemptions"}
	d.Notes = []string{"the HPA is at its ceiling"}
	d.OfferProfile = true
	return it
}

// abortItem is the abort-rate alert's diagnosis with its trace report, 37 requests of the window
// ended untraced (clients that gave up after their first token: vllm-project/vllm#32162): the
// list is of the slowest traced requests, and says how many are not in it.
func abortItem() Item {
	it := viewItem(playbooks.VerdictClientAborts, "vllm-0")
	it.Alert.Labels["alertname"] = "VLLMRequestAbortRateHigh"
	it.Diagnosis.Playbook = "request-abort-rate-high"
	r := &traces.Report{Service: "vllm-llama-8b", Operation: "llm_request", MinDuration: time.Second, Searched: 42,
		Summary: "The 2 slowest requests (4s-5s) spent 90% of their time decoding (queue 6%, prefill 4%).",
		Requests: []traces.Request{
			{TraceID: "a1", RequestID: "cmpl-1", Duration: 5 * time.Second, Queue: 300 * time.Millisecond, Prefill: 200 * time.Millisecond, Decode: 4500 * time.Millisecond,
				PromptTokens: 900, CompletionTokens: 420, Link: "https://jaeger.example/trace/a1"},
			{TraceID: "b2", Duration: 4 * time.Second, Queue: 200 * time.Millisecond, Prefill: 200 * time.Millisecond, Decode: 3600 * time.Millisecond,
				PromptTokens: 800, CompletionTokens: 380, Link: "https://jaeger.example/trace/b2"},
		}}
	r.MarkUntraced(37)
	it.Diagnosis.SlowestRequests = r
	return it
}

// viewCases are the notifications whose views are golden: every shape a view takes.
func viewCases() map[string]struct {
	n *Notification
	o ViewOptions
} {
	opts := ViewOptions{StormThreshold: 5}
	linked := ViewOptions{StormThreshold: 5, WindowBefore: 15 * time.Minute, Links: []LinkTemplate{
		{Title: "Grafana", Template: mustTemplate("https://grafana.example/d/vllm?var-model={{.Model}}&var-pod={{.Pod}}&from={{.FromMS}}&to={{.ToMS}}")},
		{Title: "Traces of slow requests", Template: mustTemplate("https://jaeger.example/search?service=vllm-{{.Model}}&start={{.FromUS}}&end={{.ToUS}}")},
	}}

	unmatched := Item{Alert: viewAlert("vllm-9", StatusFiring), Unmatched: true}
	unmatched.Alert.Labels["alertname"] = "VLLMSomethingElse"

	degraded := viewItem(playbooks.VerdictInconclusive, "vllm-0")
	degraded.Diagnosis.Title = ""
	degraded.Diagnosis.Error = "Prometheus unreachable: dial tcp 10.0.0.1:9090: connection refused"
	degraded.Diagnosis.Evidence = nil
	degraded.Diagnosis.OfferProfile = true

	// Label text with format characters (a right-to-left override, a zero-width space) and a
	// control character, and links that are not http(s).
	hostile := viewItem(playbooks.VerdictKVPressure, "vllm\u202egnp.exe")
	hostile.Alert.Labels["model_name"] = "llama\u200b-8b\x1b[31m"
	hostile.Alert.Labels["alertname"] = "VLLMKV\u2066CacheNearFull"
	hostile.Alert.GeneratorURL = "javascript:alert(1)"
	hostile.Alert.Annotations["runbook_url"] = "data:text/html,<script>alert(1)</script>"
	hostile.Diagnosis.Summary = "pod vllm\u202egnp.exe holds 95% of its KV cache\nno preemption yet"
	hostile.Diagnosis.Scope["pod"] = "vllm\u202egnp.exe"
	hostile.Diagnosis.SlowestRequests = &traces.Report{Service: "vllm", Operation: "llm_request", Summary: "one slow request",
		SearchLink: "javascript:alert(2)", Requests: []traces.Request{{TraceID: "c3", Duration: time.Second, Link: "vbscript:msgbox(3)"}}}
	hostileN := viewNotification(StatusFiring, hostile)
	hostileN.ExternalURL = "javascript:alert(4)"
	hostileN.GroupLabels = map[string]string{"alertname": "VLLMKV\u2066CacheNearFull"}

	shared := viewDiagnosis(playbooks.VerdictCapacityPastKnee, "")
	shared.Notes = []string{"alert storm: 9 alerts summarised by one diagnosis from group-wide queries"}
	var storm []Item
	for i := range 9 {
		storm = append(storm, Item{Alert: viewAlert(fmt.Sprintf("vllm-%02d", 9-i), StatusFiring), Diagnosis: shared})
	}
	storm = append(storm, viewItem(playbooks.VerdictKVPressure, "vllm-20"), viewItem(playbooks.VerdictKVPressure, "vllm-21"), unmatched)

	opened := viewNotification(StatusFiring, viewItem(playbooks.VerdictCapacityPastKnee, "vllm-0"))
	opened.Incident = testIncident(false)
	opened.Incident.Change = IncidentChange{Opened: true, Joined: []string{"fp-vllm-0"}}
	stalled := viewNotification(StatusFiring, viewItem(playbooks.VerdictEngineStalled, "vllm-2"))
	stalled.Incident = testIncident(true)
	stalled.Incident.Change = IncidentChange{VerdictWas: playbooks.VerdictCapacityPastKnee, Joined: []string{"stall-vllm-2"}}
	ended := viewNotification(StatusResolved, Item{Alert: viewAlert("vllm-0", StatusResolved)})
	ended.Incident = testIncident(false)
	for i := range ended.Incident.Members {
		ended.Incident.Members[i].Status, ended.Incident.Members[i].EndsAt = StatusResolved, t0.Add(13*time.Minute)
	}
	ended.Incident.Resolved = t0.Add(13 * time.Minute)
	ended.Incident.Change = IncidentChange{Resolved: true}

	return map[string]struct {
		n *Notification
		o ViewOptions
	}{
		"incident-opened":        {opened, opts},
		"incident-per-pod-cause": {stalled, opts},
		"incident-resolved":      {ended, opts},
		"firing-one":             {viewNotification(StatusFiring, richItem()), linked},
		"firing-abort-untraced":  {viewNotification(StatusFiring, abortItem()), opts},
		"firing-two":             {viewNotification(StatusFiring, viewItem(playbooks.VerdictKVPreemption, "vllm-0"), unmatched), opts},
		"firing-degraded":        {viewNotification(StatusFiring, degraded), opts},
		"firing-hostile":         {hostileN, linked},
		"storm":                  {viewNotification(StatusFiring, storm...), linked},
		"resolved":               {viewNotification(StatusResolved, Item{Alert: viewAlert("vllm-0", StatusResolved)}, Item{Alert: viewAlert("vllm-1", StatusResolved)}), opts},
		"firing-and-resolve":     {viewNotification(StatusFiring, viewItem(playbooks.VerdictHealthy, "vllm-2"), Item{Alert: viewAlert("vllm-0", StatusResolved)}), opts},
	}
}

// testIncident is the incident of a model: the queue alert of vllm-0 (its cause) and the TTFT
// alert of vllm-0 (a symptom); with stall, pod vllm-2 stalled (the cause, its pod named), and
// twelve more pods' queue alerts, more than a view lists.
func testIncident(stall bool) *Incident {
	member := func(fp, name, pod, verdict, role string) Member {
		return Member{Fingerprint: fp, Alertname: name, Pod: pod, Verdict: verdict, Role: role, Status: StatusFiring, StartsAt: startTS,
			Summary: "summary of " + verdict + " on " + pod, Joined: t0}
	}
	inc := &Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm"},
		Opened: t0, Started: startTS, Verdict: playbooks.VerdictCapacityPastKnee, Seq: 2,
		Cause: Cause{Alertname: "VLLMQueueDepthHigh", Title: "Capacity, past the knee: add replicas", Summary: "140 requests waiting; queueing is 97.1% of TTFT.",
			Actions: []string{"Add replicas (or raise the HPA ceiling)", "Shed load at the router"}},
		Members: []Member{
			member("fp-vllm-0", "VLLMTimeToFirstTokenP99High", "vllm-0", playbooks.VerdictCapacityPastKnee, RoleSymptom),
			member("queue-vllm-0", "VLLMQueueDepthHigh", "vllm-0", playbooks.VerdictCapacityPastKnee, RoleCause),
		}}
	if !stall {
		return inc
	}
	inc.Verdict = playbooks.VerdictEngineStalled
	inc.Cause = Cause{Alertname: "VLLMEngineStalled", Title: "Engine stalled on vllm-2: restart it", Summary: "Pod vllm-2 made no progress for 7m48s while it holds requests.",
		Actions: []string{"Restart pod vllm-2", "Take a stack dump first: py-spy dump --pid <EngineCore pid>"}, Pods: []string{"vllm-2"}}
	inc.Members[1].Role = RoleSymptom
	stalled := member("stall-vllm-2", "VLLMEngineStalled", "vllm-2", playbooks.VerdictEngineStalled, RoleCause)
	stalled.Labels = map[string]string{"engine": "0"}
	inc.Members = append(inc.Members, stalled)
	for i := range 12 {
		inc.Members = append(inc.Members, member(fmt.Sprintf("queue-vllm-%d", 10+i), "VLLMQueueDepthHigh", fmt.Sprintf("vllm-%d", 10+i), playbooks.VerdictKVPressure, RoleSymptom))
	}
	inc.Members[3].Status, inc.Members[3].EndsAt = StatusResolved, t0.Add(5*time.Minute)
	inc.Unlisted, inc.UnlistedFiring = 3, 2
	return inc
}

func mustTemplate(s string) *texttemplate.Template {
	t, err := ParseURLTemplate("t", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestEveryViewShapeIsItsGoldenView(t *testing.T) {
	for name, c := range viewCases() {
		t.Run(name, func(t *testing.T) {
			v := NewView(c.n, c.o)
			golden.Check(t, filepath.Join("views", name+".json"), viewJSON(t, struct {
				Headline string
				View     *View
			}{v.Headline(), v}))
		})
	}
}

// Whatever the labels hold, the view shows no invisible character, and no link that is not
// http(s): every integration maps the view, so none can show them.
func TestAViewShowsNoHiddenCharacterAndNoLinkButHTTP(t *testing.T) {
	c := viewCases()["firing-hostile"]
	v := NewView(c.n, c.o)
	raw := viewJSON(t, v)
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "URL" || k == "link" || k == "search_link") && s != "" && HTTPURL(s) == "" {
					t.Errorf("%s %q is not an http(s) URL", k, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			for _, r := range x {
				if hidden(r, true) {
					t.Errorf("%q holds the hidden character %U", x, r)
				}
			}
		}
	}
	var generic any
	_ = json.Unmarshal(raw, &generic)
	walk(generic)
	for _, want := range []string{"vllm<U+202E>gnp.exe", "llama<U+200B>-8b<U+001B>[31m", "VLLMKV<U+2066>CacheNearFull"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the view does not show %q:\n%s", want, raw)
		}
	}
	if v.Alertmanager != nil || len(v.Firing[0].Links) != 2 || v.Firing[0].Diagnosis.Slowest.SearchLink != "" {
		t.Errorf("links that are not http(s) were kept: %+v %+v", v.Alertmanager, v.Firing[0].Links)
	}
}

func TestPrintableShowsWhatLabelTextHides(t *testing.T) {
	for _, c := range []struct{ in, label, text string }{
		{"vllm-0", "vllm-0", "vllm-0"},
		{"vllm\u202egnp.exe", "vllm<U+202E>gnp.exe", "vllm<U+202E>gnp.exe"},
		{"a\u200bb\u200dc\ufeffd", "a<U+200B>b<U+200D>c<U+FEFF>d", "a<U+200B>b<U+200D>c<U+FEFF>d"},
		{"tag\U000E0041", "tag<U+E0041>", "tag<U+E0041>"},
		{"two\nlines\tand\x1b[0m", "two<U+000A>lines<U+0009>and<U+001B>[0m", "two\nlines\tand<U+001B>[0m"},
		{"line\u2028sep", "line<U+2028>sep", "line<U+2028>sep"},
		{"bad\xffbyte", "bad\ufffdbyte", "bad\ufffdbyte"},
		{"naïve 模型 ✓", "naïve 模型 ✓", "naïve 模型 ✓"},
	} {
		if got := Printable(c.in); got != c.label {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.label)
		}
		if got := printableText(c.in); got != c.text {
			t.Errorf("printableText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

func TestOnlyHTTPURLsBecomeLinks(t *testing.T) {
	for in, want := range map[string]string{
		"https://grafana.example/d/x?a=1": "https://grafana.example/d/x?a=1",
		"http://prometheus:9090/graph":    "http://prometheus:9090/graph",
		"javascript:alert(1)":             "",
		"JavaScript://%0aalert(1)":        "",
		"data:text/html,x":                "",
		"//evil.example/x":                "",
		"/graph?g0.expr=up":               "",
		"https://":                        "",
		"":                                "",
	} {
		if got := HTTPURL(in); got != want {
			t.Errorf("HTTPURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[string]string{"42s": "42s", "23m10s": "23m", "1h5m": "1h 5m", "1h": "1h", "51h": "2d 3h", "-5s": "0s"} {
		dur, _ := time.ParseDuration(d)
		if got := HumanDuration(dur); got != want {
			t.Errorf("HumanDuration(%s) = %s, want %s", d, got, want)
		}
	}
}

// An incident's view says one verdict, from its cause, names the pod of a per-pod cause, lists
// causes first, alerts alike on one line, at most maxMemberLines lines, and counts the rest.
func TestAnIncidentsViewListsCausesFirstAndCountsTheRest(t *testing.T) {
	c := viewCases()["incident-per-pod-cause"]
	iv := NewView(c.n, c.o).Incident
	if iv == nil || iv.Verdict != playbooks.VerdictEngineStalled || iv.Where() != "on pod vllm-2" || iv.Class != playbooks.ClassProblem {
		t.Fatalf("incident view %+v", iv)
	}
	if m := iv.Members[0]; m.Alertname != "VLLMEngineStalled" || m.Says() != "engine-stalled, cause" || m.Where() != "pod vllm-2 · engine 0" || !m.New {
		t.Errorf("first line %+v says %q at %q", m, m.Says(), m.Where())
	}
	// The eleven firing queue alerts that say kv-pressure share a line; the resolved one is
	// last, on a line of its own.
	if len(iv.Members) != 5 || iv.Alerts != 18 || iv.Firing != 16 || iv.More != 3 || iv.MoreFiring != 2 {
		t.Fatalf("%d lines of %d alerts (%d firing), %d more (%d firing)", len(iv.Members), iv.Alerts, iv.Firing, iv.More, iv.MoreFiring)
	}
	if m := iv.Members[3]; m.Alerts() != 11 || m.Where() != "pods vllm-11, vllm-12, vllm-13, vllm-14, vllm-15, vllm-16, vllm-17, vllm-18, vllm-19, vllm-20, vllm-21" ||
		m.Summary != "" || m.Says() != "kv-pressure, symptom" {
		t.Errorf("the alike alerts' line %+v at %q", m, m.Where())
	}
	if m := iv.Members[4]; !m.Resolved || m.Where() != "pod vllm-10" || m.Summary != "summary of kv-pressure on vllm-10" {
		t.Errorf("the last line is not the resolved alert's own: %+v", m)
	}
	if got := iv.MoreText(); got != "…and 3 more alerts (2 firing), not listed" {
		t.Errorf("MoreText = %q", got)
	}
	if got := iv.Change(); got != "1 alert joined; engine-stalled ranks above capacity-past-knee: it is the incident's verdict now" {
		t.Errorf("Change = %q", got)
	}
	if got := iv.Headline(); got != "FIRING: incident meta-llama/Llama-3.1-8B-Instruct · llm (18 alerts)" {
		t.Errorf("Headline = %q", got)
	}
	ended := NewView(viewCases()["incident-resolved"].n, c.o).Incident
	if d, ok := ended.Lasted(); ended.Status != StatusResolved || !ok || d != 23*time.Minute || ended.Change() != "resolved after 23m" {
		t.Errorf("resolved incident: %s, lasted %v, change %q", ended.Status, d, ended.Change())
	}
	if got := ended.Members[0].Says(); got != "capacity-past-knee, cause, resolved after 23m" {
		t.Errorf("a resolved member says %q", got)
	}
	if v := NewView(viewCases()["firing-one"].n, c.o); v.Incident != nil {
		t.Error("a notification without an incident has an incident view")
	}
}

// A line holds at most maxLinePods pods (the next alike alert starts a line of its own), and a
// view at most maxMemberLines lines: the alerts past them are counted.
func TestAnIncidentsViewBoundsItsLines(t *testing.T) {
	inc := &Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "m"}, Verdict: playbooks.VerdictCapacityPastKnee}
	add := func(name, pod string) {
		inc.Members = append(inc.Members, Member{Fingerprint: name + "/" + pod, Alertname: name, Pod: pod, Verdict: playbooks.VerdictCapacityPastKnee,
			Role: RoleCause, Status: StatusFiring})
	}
	for i := range maxLinePods + 1 {
		add("VLLMQueueDepthHigh", fmt.Sprintf("vllm-%02d", i))
	}
	for i := range maxMemberLines {
		add(fmt.Sprintf("Alert%02d", i), "vllm-00")
	}
	iv := newIncidentView(inc)
	if len(iv.Members) != maxMemberLines || iv.Members[0].Alerts() != maxLinePods || iv.Members[1].Where() != fmt.Sprintf("pod vllm-%02d", maxLinePods) {
		t.Fatalf("%d lines, the first of %d alerts, the second at %q", len(iv.Members), iv.Members[0].Alerts(), iv.Members[1].Where())
	}
	if iv.More != 2 || iv.MoreFiring != 2 {
		t.Errorf("%d more (%d firing), want the last two alert names counted", iv.More, iv.MoreFiring)
	}
}

// The storm summary is the view's, whatever the integration: counts most first, the
// group-wide diagnosis once, every alert a row by verdict, model and pod; and a group at the
// threshold is no storm (the hard negative).
func TestAStormIsSummarisedOnceAboveTheThreshold(t *testing.T) {
	c := viewCases()["storm"]
	v := NewView(c.n, c.o)
	if !v.Summarised || len(v.Storm.Rows) != 12 || v.Storm.Counts[0] != (VerdictCount{playbooks.VerdictCapacityPastKnee, playbooks.ClassProblem, 9}) {
		t.Fatalf("storm: summarised %v, %d rows, counts %+v", v.Summarised, len(v.Storm.Rows), v.Storm.Counts)
	}
	if len(v.Storm.Shared) != 1 || v.Storm.Shared[0].Alerts != 9 || !v.Firing[1].Shared || v.Firing[0].Shared {
		t.Errorf("the group-wide diagnosis: %+v; the second alert should point at the first's", v.Storm.Shared)
	}
	if r := v.Storm.Rows[0]; r.Pod != "vllm-01" {
		t.Errorf("first row %+v; want capacity-past-knee's vllm-01 first", r)
	}
	atThreshold := viewNotification(StatusFiring, c.n.Items[:5]...)
	if NewView(atThreshold, c.o).Summarised {
		t.Error("5 alerts at a threshold of 5 are a storm")
	}
	if NewView(c.n, ViewOptions{}).Summarised {
		t.Error("a threshold of 0 summarised")
	}
}

func TestTheFleetTableMarksTheFocusAndTheAffectedPods(t *testing.T) {
	fl := NewDiagnosisView(richItem().Diagnosis).Fleet
	want := []string{
		"   pod              waiting  TTFT p99",
		">! vllm-0 (decode)      140      40 s",
		"     engine 1           100      41 s",
		"     engine 0            40      39 s",
		" ! vllm-1               130      38 s",
		"   vllm-2                12       1 s",
	}
	if got := fl.Table(8); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := fl.Table(2); got[len(got)-1] != "   … 1 more pods (0 of them affected)" {
		t.Errorf("a cut table ends with %q", got[len(got)-1])
	}
}

// viewJSON is v as indented JSON, with <, > and & as they are.
func viewJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}
