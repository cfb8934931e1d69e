package teams

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/internal/golden"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

var (
	t0      = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	startTS = t0.Add(-10 * time.Minute)
)

func f(v float64) *float64 { return &v }

func alert(pod, status string) template.Alert {
	a := template.Alert{
		Status: status,
		Labels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "meta-llama/Llama-3.1-8B-Instruct",
			"namespace": "llm", "pod": pod},
		Annotations:  map[string]string{"summary": "TTFT p99 above 2s", "runbook_url": "https://runbooks.example/ttft"},
		StartsAt:     startTS,
		GeneratorURL: "http://prometheus.example/graph?g0.expr=vllm%3Atime_to_first_token_seconds",
		Fingerprint:  "fp-" + pod,
	}
	if status == notify.StatusResolved {
		a.EndsAt = t0.Add(13 * time.Minute)
	}
	return a
}

func diagnosis(verdict, pod string) *playbooks.Diagnosis {
	return &playbooks.Diagnosis{
		Playbook: "ttft-p99-high", Verdict: verdict, Title: "Capacity, past the knee: add replicas",
		Summary: "140 requests waiting (60 one window ago) and queueing is 97.1% of TTFT; 64 running, no preemption.",
		Actions: []string{"Add replicas (or raise the HPA ceiling)", "Shed load at the router"},
		Evidence: []playbooks.Evidence{
			{Name: "ttft_p99", Title: "TTFT p99", Value: f(40), Unit: "s", Text: "40 s"},
			{Name: "queue_share", Title: "Queue share of TTFT", Value: f(0.971), Text: "97.1%"},
			{Name: "prefill_mean", Title: "Prefill time mean", Value: f(0.1), Text: "100 ms", Baseline: f(0.1), BaselineText: "100 ms"},
			{Name: "preemptions", Title: "Preemptions", Problem: "no series"},
		},
		Scope:       map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm", "pod": pod},
		EvaluatedAt: t0,
	}
}

func item(verdict, pod string) notify.Item {
	return notify.Item{Alert: alert(pod, notify.StatusFiring), Diagnosis: diagnosis(verdict, pod)}
}

func notification(status string, items ...notify.Item) *notify.Notification {
	return &notify.Notification{
		GroupKey: `{}:{alertname="VLLMTimeToFirstTokenP99High"}`, Status: status, Receiver: "vllm-responder",
		ExternalURL:  "http://alertmanager.example",
		GroupLabels:  map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		CommonLabels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		Items:        items, Source: notify.SourceAlertmanager, ReceivedAt: t0,
	}
}

// richItem has everything a card can show: fleet, slowest requests, notes, missing, an error.
func richItem() notify.Item {
	it := item(playbooks.VerdictCapacityPastKnee, "vllm-0")
	d := it.Diagnosis
	d.Fleet = &playbooks.FleetView{By: "pod", Focus: "vllm-0", Pods: 3, Affected: 3, Scope: "every pod of the model",
		Siblings: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm"},
		Columns:  []playbooks.FleetColumn{{Name: "waiting", Title: "waiting"}, {Name: "ttft", Title: "TTFT p99"}},
		Rows: []playbooks.FleetRow{
			{Pod: "vllm-0", Texts: []string{"140", "40 s"}, Focus: true, Affected: true},
			{Pod: "vllm-1", Texts: []string{"130", "38 s"}, Affected: true},
			{Pod: "vllm-2", Texts: []string{"120", "35 s"}, Affected: true},
		}}
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
	d.Notes = []string{"alert storm: 6 alerts summarised by one diagnosis"}
	return it
}

// cases are the notifications whose cards are golden: every shape a card takes.
func cases() map[string]*notify.Notification {
	degraded := item(playbooks.VerdictInconclusive, "vllm-0")
	degraded.Diagnosis.Title = "Inconclusive"
	degraded.Diagnosis.Error = "Prometheus unreachable: dial tcp 10.0.0.1:9090: connection refused"
	degraded.Diagnosis.OfferProfile = true

	hostile := item(playbooks.VerdictKVPressure, "vllm-*evil*")
	hostile.Alert.Labels["model_name"] = "[click me](https://evil.example) _x_"
	hostile.Diagnosis.Summary = "KV cache **99%** full <b>"
	hostile.Alert.GeneratorURL = "javascript:alert(1)"

	unmatched := notify.Item{Alert: alert("vllm-9", notify.StatusFiring), Unmatched: true}
	unmatched.Alert.Labels["alertname"] = "VLLMSomethingElse"

	shared := diagnosis(playbooks.VerdictCapacityPastKnee, "")
	shared.Notes = []string{"alert storm: 12 alerts summarised by one diagnosis from group-wide queries"}
	var storm []notify.Item
	for i := range 12 {
		storm = append(storm, notify.Item{Alert: alert(fmt.Sprintf("vllm-%02d", i), notify.StatusFiring), Diagnosis: shared})
	}

	// Three group-wide diagnoses whose every text is too large for any layout: the card is the
	// short one.
	var huge []notify.Item
	for i := range 3 {
		d := diagnosis(playbooks.VerdictCapacityPastKnee, "")
		d.Summary = strings.Repeat("<", 30<<10)
		for j := range 2 {
			huge = append(huge, notify.Item{Alert: alert(fmt.Sprintf("vllm-%d-%d", i, j), notify.StatusFiring), Diagnosis: d})
		}
	}

	resolvedOne := notify.Item{Alert: alert("vllm-0", notify.StatusResolved)}
	resolvedTwo := notify.Item{Alert: alert("vllm-1", notify.StatusResolved)}

	joined := notification(notify.StatusFiring, item(playbooks.VerdictCapacityPastKnee, "vllm-0"))
	joined.Incident = incident(false)
	joined.Incident.Change = notify.IncidentChange{VerdictWas: playbooks.VerdictCapacityPastKnee, Joined: []string{"fp-vllm-0"}}
	ended := notification(notify.StatusResolved, resolvedOne)
	ended.Incident = incident(true)
	ended.Incident.Change = notify.IncidentChange{Resolved: true}
	return map[string]*notify.Notification{
		"incident-joined":       joined,
		"incident-resolved":     ended,
		"firing-one":            notification(notify.StatusFiring, richItem()),
		"firing-abort-untraced": notification(notify.StatusFiring, abortItem()),
		"firing-two":            notification(notify.StatusFiring, item(playbooks.VerdictKVPreemption, "vllm-0"), unmatched),
		"firing-degraded":       notification(notify.StatusFiring, degraded),
		"firing-hostile":        notification(notify.StatusFiring, hostile),
		"storm":                 notification(notify.StatusFiring, storm...),
		"resolved":              notification(notify.StatusResolved, resolvedOne, resolvedTwo),
		"firing-and-resolve":    notification(notify.StatusFiring, item(playbooks.VerdictHealthy, "vllm-2"), resolvedOne),
		"too-large":             notification(notify.StatusFiring, huge...),
	}
}

// abortItem is the abort-rate alert's diagnosis whose trace report misses 37 requests of the
// window (untraced: vllm-project/vllm#32162): its list is titled as the slowest traced ones.
func abortItem() notify.Item {
	it := item(playbooks.VerdictClientAborts, "vllm-0")
	it.Alert.Labels["alertname"] = "VLLMRequestAbortRateHigh"
	r := &traces.Report{Service: "vllm-llama-8b", Operation: "llm_request", MinDuration: time.Second, Searched: 42,
		Summary: "The slowest request (5s) spent 90% of its time decoding (queue 6%, prefill 4%).",
		Requests: []traces.Request{{TraceID: "a1", RequestID: "cmpl-1", Duration: 5 * time.Second, Queue: 300 * time.Millisecond,
			Prefill: 200 * time.Millisecond, Decode: 4500 * time.Millisecond, PromptTokens: 900, CompletionTokens: 420, Link: "https://jaeger.example/trace/a1"}}}
	r.MarkUntraced(37)
	it.Diagnosis.SlowestRequests = r
	return it
}

// incident is the incident of the model: pod vllm-2's engine stalled (its cause, the pod named),
// the TTFT alert of vllm-0 a symptom; resolved, every member resolved 23m after the first
// started.
func incident(resolved bool) *notify.Incident {
	inc := &notify.Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "llm"},
		Opened: startTS, Started: startTS, Verdict: playbooks.VerdictEngineStalled, Seq: 3,
		Cause: notify.Cause{Alertname: "VLLMEngineStalled", Title: "Engine stalled on vllm-2: restart it", Pods: []string{"vllm-2"}},
		Members: []notify.Member{
			{Fingerprint: "fp-vllm-0", Alertname: "VLLMTimeToFirstTokenP99High", Pod: "vllm-0", Verdict: playbooks.VerdictCapacityPastKnee, Role: notify.RoleSymptom, Status: notify.StatusFiring, StartsAt: startTS},
			{Fingerprint: "stall-vllm-2", Alertname: "VLLMEngineStalled", Pod: "vllm-2", Verdict: playbooks.VerdictEngineStalled, Role: notify.RoleCause, Status: notify.StatusFiring, StartsAt: startTS},
		}}
	if resolved {
		for i := range inc.Members {
			inc.Members[i].Status, inc.Members[i].EndsAt = notify.StatusResolved, t0.Add(13*time.Minute)
		}
		inc.Resolved = t0.Add(13 * time.Minute)
	}
	return inc
}

func TestEveryCardShapeRendersAsItsGoldenCard(t *testing.T) {
	for name, n := range cases() {
		t.Run(name, func(t *testing.T) {
			out, err := json.MarshalIndent(Render(n, testView, false), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "cards/"+name+".json", append(out, '\n'))
		})
	}
}

// A resolution whose firing card could not be checked (the store was down) says so.
func TestAnUncheckedResolutionRendersAsItsGoldenCard(t *testing.T) {
	m := Render(notification(notify.StatusResolved, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)}), testView, true)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "cards/resolved-unchecked.json", append(out, '\n'))
}

func TestEveryVerdictRendersAsAGoldenCard(t *testing.T) {
	for _, v := range playbooks.KnownVerdicts {
		t.Run(v, func(t *testing.T) {
			out, err := json.MarshalIndent(Render(notification(notify.StatusFiring, item(v, "vllm-0")), testView, false), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "cards/verdict-"+v+".json", append(out, '\n'))
		})
	}
}

func TestAFiringAndAResolvedCardAreToldApart(t *testing.T) {
	firing := Render(notification(notify.StatusFiring, item(playbooks.VerdictCapacityPastKnee, "vllm-0")), testView, false).Attachments[0].Content
	resolved := Render(notification(notify.StatusResolved, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)}), testView, false).Attachments[0].Content
	fHead, rHead := firing.Body[0], resolved.Body[0]
	if fHead.Style != "attention" || fHead.Items[0].Color != "Attention" || !strings.HasPrefix(fHead.Items[0].Text, "FIRING: VLLMTimeToFirstTokenP99High") {
		t.Errorf("firing header = %+v", fHead)
	}
	if rHead.Style != "good" || rHead.Items[0].Color != "Good" || !strings.HasPrefix(rHead.Items[0].Text, "RESOLVED: VLLMTimeToFirstTokenP99High") {
		t.Errorf("resolved header = %+v", rHead)
	}
	// The resolution names the firing card: its header, and each alert as the firing card
	// showed it (scope and start).
	raw, _ := json.Marshal(resolved)
	for _, want := range []string{"FIRING: VLLMTimeToFirstTokenP99High", firingLine(alert("vllm-0", notify.StatusFiring)), "resolved 12:13 UTC after 23m"} {
		if !strings.Contains(string(raw), md(want)) {
			t.Errorf("resolution card does not say %q:\n%s", want, raw)
		}
	}
	if !strings.Contains(subtleTexts(firing), firingLine(alert("vllm-0", notify.StatusFiring))) {
		t.Errorf("the firing card does not show the line its resolution names")
	}
}

// testView is what the tests' views are built with: the default storm threshold.
var testView = notify.ViewOptions{StormThreshold: 5}

// firingLine is the line that names a firing alert in its card (its scope and start).
func firingLine(a template.Alert) string {
	av := notify.NewView(notification(notify.StatusFiring, notify.Item{Alert: a}), testView).Firing[0]
	return alertLine("", av.Scope, av.StartsAt, layout{label: 200})
}

func subtleTexts(c Card) string {
	var b strings.Builder
	var walk func([]Element)
	walk = func(els []Element) {
		for _, e := range els {
			b.WriteString(e.Text + "\n")
			walk(e.Items)
		}
	}
	walk(c.Body)
	return b.String()
}

func TestTextFromAlertsCannotBecomeMarkdownOrLinks(t *testing.T) {
	for in, want := range map[string]string{
		"[click](https://evil.example)": `\[click\](https://evil.example)`,
		"**bold** _it_ `code` ~s~":      `\*\*bold\*\* \_it\_ \` + "`code\\`" + ` \~s\~`,
		"model_name kv_cache_usage":     "model_name kv_cache_usage",
		`back\slash <b>`:                `back\\slash \<b\>`,
	} {
		if got := md(in); got != want {
			t.Errorf("md(%q) = %q, want %q", in, got, want)
		}
	}
	card := Render(cases()["firing-hostile"], testView, false).Attachments[0].Content
	for _, a := range allActions(card) {
		if notify.HTTPURL(a.URL) == "" {
			t.Errorf("action %q opens %q: only http(s) links belong on a card", a.Title, a.URL)
		}
	}
}

func allActions(c Card) []Action {
	out := append([]Action(nil), c.Actions...)
	var walk func([]Element)
	walk = func(els []Element) {
		for _, e := range els {
			out = append(out, e.Actions...)
			if e.SelectAction != nil {
				out = append(out, *e.SelectAction)
			}
			walk(e.Items)
			walk(e.Columns)
		}
	}
	walk(c.Body)
	return out
}

func TestAHugeNotificationStaysUnderTeamsMessageSize(t *testing.T) {
	var items []notify.Item
	for i := range 5000 {
		it := richItem()
		it.Alert = alert(fmt.Sprintf("vllm-%04d-%s", i, strings.Repeat("x", 60)), notify.StatusFiring)
		it.Diagnosis.Summary = strings.Repeat("very long summary ", 300)
		items = append(items, it)
	}
	for i := range 3000 {
		items = append(items, notify.Item{Alert: alert(fmt.Sprintf("gone-%d", i), notify.StatusResolved)})
	}
	b, err := json.Marshal(Render(notification(notify.StatusFiring, items...), testView, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxCardBytes {
		t.Errorf("card of %d bytes, the limit is %d", len(b), maxCardBytes)
	}
	if !strings.Contains(string(b), "more alerts not listed") {
		t.Errorf("the card does not say that alerts were left out")
	}
}

func TestTheDetailedCardShowsWhatTheIssueAsksFor(t *testing.T) {
	card := Render(cases()["firing-one"], testView, false).Attachments[0].Content
	texts := subtleTexts(card)
	raw, _ := json.Marshal(card)
	for _, want := range []string{"Verdict: capacity-past-knee", "Capacity, past the knee", "140 requests waiting", "Evidence", "Fleet",
		"Slowest requests", "Recommended actions", "1. Add replicas"} {
		if !strings.Contains(texts, want) {
			t.Errorf("card text lacks %q", want)
		}
	}
	for _, want := range []string{`"type":"FactSet"`, `"title":"TTFT p99","value":"40 s"`, `"url":"https://jaeger.example/trace/a1"`,
		`"title":"Runbook","url":"https://runbooks.example/ttft"`, `"title":"Alert query in Prometheus"`, `"title":"Slow requests in Jaeger"`,
		`"version":"1.2"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("card lacks %s", want)
		}
	}
	env, _ := json.Marshal(Render(cases()["firing-one"], testView, false))
	if !strings.Contains(string(env), `"contentType":"application/vnd.microsoft.card.adaptive","contentUrl":null`) || !strings.HasPrefix(string(env), `{"type":"message"`) {
		t.Errorf("not the envelope Workflows expects: %.200s", env)
	}
}

// A label-valued fact (a workload, an HPA) is evidence with a value, not "no data".
func TestALabelValuedFactIsAFactWithItsValue(t *testing.T) {
	set := evidenceFacts(notify.NewDiagnosisView(&playbooks.Diagnosis{Evidence: []playbooks.Evidence{{Name: "kube_hpa", Title: "HorizontalPodAutoscaler", Label: "llama", Text: "llama"}, {Name: "x", Title: "X"}}}).Evidence)
	if len(set.Facts) != 2 || !strings.Contains(fmt.Sprint(set.Facts[0].Value), "llama") || !strings.Contains(fmt.Sprint(set.Facts[1].Value), "no data") {
		t.Fatalf("facts: %+v", set.Facts)
	}
}

// cardSize is the size of the message Teams receives.
func cardSize(t *testing.T, m Message) int {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// Every card stays under Teams' limit whatever its labels hold: the multi-alert header, the
// alert lines, the storm facts and the resolved lines cut label text too (issue 33.7: two alerts
// with 20 KB pod labels made a 41 KB card, a resolution of three 15 KB pods 46 KB, and Teams
// refused both). What fits is still said: each alert, cut.
func TestEveryCardStaysUnderTheLimitWhateverItsLabels(t *testing.T) {
	big := func(n int, pod string) notify.Item {
		it := item(playbooks.VerdictCapacityPastKnee, strings.Repeat(pod, n))
		it.Diagnosis.Scope["pod"] = it.Alert.Labels["pod"]
		return it
	}
	resolvedBig := func(pod string) notify.Item {
		return notify.Item{Alert: alert(strings.Repeat(pod, 15<<10), notify.StatusResolved)}
	}
	hostile := big(20<<10, "<")
	hostile.Alert.Labels["alertname"] = strings.Repeat("\u202e", 10<<10)
	hostile.Alert.Labels["model_name"] = strings.Repeat("*", 20<<10)
	hostile.Diagnosis.Title = strings.Repeat("[x]", 10<<10)
	hostile.Diagnosis.Summary = strings.Repeat("<", 30<<10)
	hostile.Alert.GeneratorURL = "https://prometheus.example/" + strings.Repeat("a", 30<<10)
	var storm []notify.Item
	for i := range 40 {
		storm = append(storm, big(2<<10, fmt.Sprintf("p%d-", i)))
	}
	for name, c := range map[string]struct {
		n    *notify.Notification
		says []string
	}{
		"two alerts with 20 KB pod labels":    {notification(notify.StatusFiring, big(20<<10, "a"), big(20<<10, "b")), []string{"FIRING: VLLMTimeToFirstTokenP99High (2 alerts)", "pod aaaa", "pod bbbb"}},
		"a resolution of three 15 KB pods":    {notification(notify.StatusResolved, resolvedBig("a"), resolvedBig("b"), resolvedBig("c")), []string{"RESOLVED: VLLMTimeToFirstTokenP99High (3 alerts)", "pod aaaa", "pod cccc"}},
		"a storm of 40 alerts with 2 KB pods": {notification(notify.StatusFiring, storm...), []string{"Alert storm: 40 alerts", "p0-p0-"}},
		"firing and three 15 KB resolved":     {notification(notify.StatusFiring, big(20<<10, "a"), resolvedBig("b"), resolvedBig("c"), resolvedBig("d")), []string{"Resolved meanwhile (3)", "pod bbbb"}},
		"every text of one alert hostile":     {notification(notify.StatusFiring, hostile), []string{"FIRING"}},
	} {
		t.Run(name, func(t *testing.T) {
			m := Render(c.n, testView, false)
			if n := cardSize(t, m); n > maxCardBytes {
				t.Errorf("card of %d bytes, the limit is %d", n, maxCardBytes)
			}
			raw, _ := json.Marshal(m)
			for _, want := range c.says {
				if !strings.Contains(string(raw), want) {
					t.Errorf("the card does not say %q", want)
				}
			}
		})
	}
}

// Only http(s) URLs become actions or links (issue 33.8: a javascript: externalURL became an
// Action.OpenUrl, and the renderer then refused the whole card), wherever the URL comes from.
func TestOnlyHTTPURLsBecomeActions(t *testing.T) {
	it := richItem()
	it.Alert.GeneratorURL = "javascript:alert(1)"
	it.Alert.Annotations["runbook_url"] = "data:text/html,<script>alert(2)</script>"
	it.Diagnosis.SlowestRequests.SearchLink = "vbscript:msgbox(3)"
	it.Diagnosis.SlowestRequests.Requests[0].Link = "javascript:alert(4)"
	n := notification(notify.StatusFiring, it)
	n.ExternalURL = "javascript:alert(5)"
	for _, r := range []*notify.Notification{n, notification(notify.StatusResolved, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})} {
		if r.Resolved() {
			r.ExternalURL = "JavaScript:alert(6)"
		}
		card := Render(r, testView, false).Attachments[0].Content
		for _, a := range allActions(card) {
			if notify.HTTPURL(a.URL) == "" {
				t.Errorf("action %q opens %q", a.Title, a.URL)
			}
		}
	}
	if got := len(allActions(Render(n, testView, false).Attachments[0].Content)); got != 1 {
		t.Errorf("%d actions; want only the second trace's link", got)
	}
}

// Format characters in labels and in what the diagnosis says (issue 33.9: "vllm\u202egnp.exe"
// shows as "vllmexe.png") reach the card visible, never raw.
func TestFormatCharactersInLabelsAreShownNotObeyed(t *testing.T) {
	it := richItem()
	it.Alert.Labels["pod"] = "vllm\u202egnp.exe"
	it.Alert.Labels["model_name"] = "llama\u200b-8b"
	it.Diagnosis.Scope["pod"] = "vllm\u202egnp.exe"
	it.Diagnosis.Summary = "adapter sql\u2066-lora waits"
	resolved := notify.Item{Alert: alert("old\u202epod", notify.StatusResolved)}
	texts := cardStrings(t, Render(notification(notify.StatusFiring, it, resolved), testView, false))
	for _, r := range []string{"\u202e", "\u200b", "\u2066"} {
		if strings.Contains(texts, r) {
			t.Errorf("the card holds %U raw", []rune(r)[0])
		}
	}
	for _, want := range []string{"vllm<U+202E>gnp.exe", "llama<U+200B>-8b", "sql<U+2066>-lora", "old<U+202E>pod"} {
		if !strings.Contains(texts, md(want)) {
			t.Errorf("the card does not show %s", md(want))
		}
	}
}

// cardStrings is every string of the message, one a line.
func cardStrings(t *testing.T, m Message) string {
	t.Helper()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case string:
			b.WriteString(x + "\n")
		}
	}
	walk(generic)
	return b.String()
}
