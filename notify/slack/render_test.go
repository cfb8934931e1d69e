package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/internal/golden"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

func TestEveryVerdictRendersAsItsGoldenBlockKitMessage(t *testing.T) {
	for _, v := range playbooks.KnownVerdicts {
		t.Run(v, func(t *testing.T) {
			nt := firingNotification(`{}:{alertname="VLLMTimeToFirstTokenP99High"}`, item(v, "vllm-0"))
			blocks, text := parentOf(nt, testRender())
			checkLimits(t, blocks)
			out, err := json.MarshalIndent(map[string]any{"text": text, "blocks": blocks}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "golden/"+v+".json", append(out, '\n'))
		})
	}
}

// goldenMessage pins a rendered message (its blocks and fallback text) in testdata/golden.
func goldenMessage(t *testing.T, name string, blocks []slackgo.Block, text map[string]string) {
	t.Helper()
	checkLimits(t, blocks)
	msg := map[string]any{"blocks": blocks}
	for k, v := range text {
		msg[k] = v
	}
	out, err := json.MarshalIndent(msg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "golden/"+name+".json", append(out, '\n'))
}

// Every kind of message the notifier and the app post, rendered alone (pure functions of the
// notification or the diagnosis and the configuration), against its golden file.
func TestEveryMessageRendersAsItsGoldenBlockKit(t *testing.T) {
	o := testRender()
	group := `{}:{alertname="VLLMTimeToFirstTokenP99High"}`
	resolvedItem := func(pod string) notify.Item {
		return notify.Item{Alert: alert(pod, notify.StatusResolved)}
	}
	changes := func(n int) []change {
		var out []change
		for i := range n {
			out = append(out, change{item: item(playbooks.VerdictKVPressure, fmt.Sprintf("vllm-%d", 10+i)), kind: changeNew})
		}
		return out
	}
	parent, parentText := parentOf(firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0")), o)
	raw, _ := json.Marshal(parent)
	th := &thread{GroupKey: group, Channel: "C0INCIDENT", TS: "1700000000.000001", Alertname: "VLLMTimeToFirstTokenP99High",
		Status: notify.StatusFiring, StartedAt: startTS, Blocks: raw, Text: parentText}
	onDemand := diagnosisFor(playbooks.VerdictInconclusive, "vllm-0")

	t.Run("storm", func(t *testing.T) {
		var items []notify.Item
		for i := range 8 {
			v := playbooks.VerdictCapacityPastKnee
			if i%3 == 0 {
				v = playbooks.VerdictKVPressure
			}
			items = append(items, item(v, fmt.Sprintf("vllm-%d", i)))
		}
		blocks, text := parentOf(firingNotification(group, items...), o)
		goldenMessage(t, "storm", blocks, map[string]string{"text": text})
	})
	t.Run("reply-news-and-resolved", func(t *testing.T) {
		blocks, text := replyBlocks(firingNotification(group), []change{
			{item: item(playbooks.VerdictKVPressure, "vllm-1"), kind: changeNew},
			{item: item(playbooks.VerdictDecodeBound, "vllm-0"), kind: changeVerdict, was: playbooks.VerdictCapacityPastKnee},
			{item: item(playbooks.VerdictKVPreemption, "vllm-3"), kind: changeFiredAgain},
		}, []notify.Item{resolvedItem("vllm-2")}, "VLLMTimeToFirstTokenP99High", o)
		goldenMessage(t, "reply-news-and-resolved", blocks, map[string]string{"text": text})
	})
	t.Run("reply-resolved-only", func(t *testing.T) {
		blocks, text := replyBlocks(firingNotification(group), nil, []notify.Item{resolvedItem("vllm-2"), resolvedItem("vllm-4")}, "VLLMTimeToFirstTokenP99High", o)
		goldenMessage(t, "reply-resolved-only", blocks, map[string]string{"text": text})
	})
	t.Run("reply-storm", func(t *testing.T) {
		blocks, text := replyBlocks(firingNotification(group), changes(o.View.StormThreshold+1), nil, "VLLMTimeToFirstTokenP99High", o)
		goldenMessage(t, "reply-storm", blocks, map[string]string{"text": text})
	})
	t.Run("resolved-parent", func(t *testing.T) {
		blocks, text, reply := resolvedMessage(th, t0.Add(25*time.Minute))
		goldenMessage(t, "resolved-parent", blocks, map[string]string{"text": text, "reply": reply})
	})
	t.Run("slowest-reply", func(t *testing.T) {
		a, b := item(playbooks.VerdictPrefillBound, "vllm-0"), item(playbooks.VerdictPrefillBound, "vllm-1")
		a.Diagnosis.SlowestRequests, b.Diagnosis.SlowestRequests = slowestReport(), slowestReport()
		goldenMessage(t, "slowest-reply", slowestReply(notify.NewView(firingNotification(group, a, b), o.View)), nil)
	})
	t.Run("incident-parent", func(t *testing.T) {
		nt := firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0"))
		nt.Incident = testIncident(false)
		blocks, text := parentOf(nt, o)
		goldenMessage(t, "incident-parent", blocks, map[string]string{"text": text})
	})
	t.Run("incident-parent-resolved", func(t *testing.T) {
		nt := firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0"))
		nt.Incident = testIncident(true)
		v := notify.NewView(nt, o.View)
		goldenMessage(t, "incident-parent-resolved", incidentParent(v.Incident, bodyBlocks(v, o)), map[string]string{"text": incidentText(v.Incident)})
	})
	t.Run("incident-evidence-reply", func(t *testing.T) {
		nt := firingNotification(group)
		nt.Incident = testIncident(false)
		nt.Incident.Verdict, nt.Incident.Change.VerdictWas = playbooks.VerdictEngineStalled, playbooks.VerdictCapacityPastKnee
		nt.Incident.Cause.Pods = []string{"vllm-2"}
		blocks, text := replyBlocks(nt, []change{{item: item(playbooks.VerdictEngineStalled, "vllm-2"), kind: changeNew, incident: true}}, nil, "incident llama · inference", o)
		blocks = append([]slackgo.Block{section(evidenceNote(notify.NewView(nt, o.View).Incident))}, blocks...)
		goldenMessage(t, "incident-evidence-reply", blocks, map[string]string{"text": text})
	})
	t.Run("on-demand-answer", func(t *testing.T) {
		buttons := buttonBlock(o.ButtonKey, buttonScope{d: onDemand, labels: onDemand.Scope, now: t0, silenceConfigured: true, capture: true})
		goldenMessage(t, "on-demand-answer", answerBlocks("`/vllm triage meta-llama/Llama-3.1-8B-Instruct vllm-0` by <@U1>", onDemand, buttons), nil)
	})
}

// The hard negatives of the replies: nothing new and nothing resolved renders nothing, and a
// storm's reply lists no traces.
func TestRepliesWithNothingToSayRenderNothing(t *testing.T) {
	o := testRender()
	if blocks, text := replyBlocks(firingNotification("g"), nil, nil, "A", o); len(blocks) != 0 || text != "" {
		t.Errorf("an empty reply rendered %d blocks, text %q", len(blocks), text)
	}
	var items []notify.Item
	for i := range o.View.StormThreshold + 1 {
		it := item(playbooks.VerdictPrefillBound, fmt.Sprintf("vllm-%d", i))
		it.Diagnosis.SlowestRequests = slowestReport()
		items = append(items, it)
	}
	if blocks := slowestReply(notify.NewView(firingNotification("g", items...), o.View)); blocks != nil {
		t.Errorf("a storm's slowest requests rendered %d blocks", len(blocks))
	}
	if blocks := slowestReply(notify.NewView(firingNotification("g", items[0]), o.View)); blocks == nil {
		t.Error("one diagnosis with traces rendered no reply")
	}
}

// checkLimits asserts Slack's documented limits on a message.
func checkLimits(t *testing.T, blocks []slackgo.Block) {
	t.Helper()
	if len(blocks) > maxBlocks {
		t.Errorf("%d blocks, Slack allows %d", len(blocks), maxBlocks)
	}
	raw, _ := json.Marshal(blocks)
	var generic []map[string]any
	_ = json.Unmarshal(raw, &generic)
	for i, b := range generic {
		if txt, ok := b["text"].(map[string]any); ok {
			s, _ := txt["text"].(string)
			limit := maxSectionChars
			if b["type"] == "header" {
				limit = maxHeaderChars
			}
			if n := utf8.RuneCountInString(s); n > limit {
				t.Errorf("block %d (%s): text of %d characters, limit %d", i, b["type"], n, limit)
			}
		}
		if els, ok := b["elements"].([]any); ok {
			for _, e := range els {
				em, _ := e.(map[string]any)
				if v, _ := em["value"].(string); len(v) > maxButtonValue {
					t.Errorf("block %d: button value of %d bytes", i, len(v))
				}
			}
			if b["type"] == "context" && len(els) > maxContextItems {
				t.Errorf("block %d: context with %d elements", i, len(els))
			}
		}
	}
}

func TestLongEvidenceIsTrimmedWithANoteAndStaysWithinSlackLimits(t *testing.T) {
	it := item(playbooks.VerdictCapacityPastKnee, "vllm-0")
	for i := range 300 {
		it.Diagnosis.Evidence = append(it.Diagnosis.Evidence, playbooks.Evidence{
			Name: fmt.Sprintf("series_%d", i), Title: strings.Repeat("long title ", 20), Value: f(float64(i)), Unit: "s", Text: fmt.Sprintf("%d s", i),
		})
	}
	it.Diagnosis.Summary = strings.Repeat("very long summary ", 400)
	blocks, _ := parentOf(firingNotification("g", it), testRender())
	checkLimits(t, blocks)
	raw, _ := json.Marshal(blocks)
	if !strings.Contains(string(raw), "more evidence lines not shown") {
		t.Errorf("no trimming note in %s", raw)
	}
}

func TestAGroupWithManyAlertsBecomesOneStormSummaryWithATableAndACount(t *testing.T) {
	var items []notify.Item
	for i := range 120 {
		v := playbooks.VerdictCapacityPastKnee
		if i%3 == 0 {
			v = playbooks.VerdictKVPressure
		}
		items = append(items, item(v, fmt.Sprintf("vllm-%03d", i)))
	}
	blocks, text := parentOf(firingNotification("g", items...), testRender())
	checkLimits(t, blocks)
	raw, _ := json.Marshal(blocks)
	for _, want := range []string{"Alert storm: 120 alerts", "80 × `capacity-past-knee`", "40 × `kv-pressure`", "more alerts not listed", "vllm-001"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("storm message lacks %q:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), actionSilence) {
		t.Error("storm message has per-alert buttons")
	}
	if !strings.Contains(text, "120 alerts") {
		t.Errorf("fallback text %q", text)
	}
}

func TestLabelValuesCannotInjectSlackMarkup(t *testing.T) {
	it := item(playbooks.VerdictHealthy, "<!channel>")
	it.Diagnosis.Summary = "<https://evil.example|click> & more"
	blocks, _ := parentOf(firingNotification("g", it), testRender())
	raw, _ := json.Marshal(blocks)
	for _, bad := range []string{"<!channel>", "<https://evil.example|click>"} {
		if strings.Contains(string(raw), bad) {
			t.Errorf("unescaped %q in %s", bad, raw)
		}
	}
}

func TestButtonsFollowTheConfiguration(t *testing.T) {
	cases := []struct {
		name    string
		verdict string
		opts    renderOptions
		want    []string
	}{
		{"inconclusive with a capturer offers capture", playbooks.VerdictInconclusive, renderOptions{Buttons: true, Silence: true, Capture: true}, []string{actionRerun, actionSilence, actionCapture, actionWrongVerdict}},
		{"inconclusive without a capturer does not", playbooks.VerdictInconclusive, renderOptions{Buttons: true, Silence: true}, []string{actionRerun, actionSilence, actionWrongVerdict}},
		{"a verdict without offer_profile has no capture button", playbooks.VerdictKVPreemption, renderOptions{Buttons: true, Silence: true, Capture: true}, []string{actionRerun, actionSilence, actionWrongVerdict}},
		{"no Alertmanager, no silence", playbooks.VerdictKVPreemption, renderOptions{Buttons: true}, []string{actionRerun, actionWrongVerdict}},
		{"no interactivity, no buttons", playbooks.VerdictInconclusive, renderOptions{Silence: true, Capture: true}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			blocks := itemBlocks(alertView(item(c.verdict, "vllm-0")), t0, c.opts, false)
			var got []string
			for _, b := range blocks {
				if ab, ok := b.(*slackgo.ActionBlock); ok {
					for _, e := range ab.Elements.ElementSet {
						switch e := e.(type) {
						case *slackgo.ButtonBlockElement:
							got = append(got, e.ActionID)
						case *slackgo.SelectBlockElement:
							got = append(got, e.ActionID)
						}
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("buttons %v, want %v", got, c.want)
			}
		})
	}
}

func TestButtonValueRoundTripsTheAlertLabels(t *testing.T) {
	key := testConfig("").buttonKey()
	in := buttonValue{Labels: map[string]string{"alertname": "A", "pod": "p-1"}}
	s, ok := encodeButtonValue(key, actionSilence, in)
	if !ok {
		t.Fatal("did not fit")
	}
	out, err := decodeButtonValue(key, actionSilence, s)
	if err != nil || out.Labels["pod"] != "p-1" || out.Labels["alertname"] != "A" {
		t.Errorf("got %+v, %v", out, err)
	}
	if _, ok := encodeButtonValue(key, actionSilence, buttonValue{Labels: map[string]string{"x": strings.Repeat("y", 3000)}}); ok {
		t.Error("a value over 2000 bytes was accepted")
	}
}

// A button's value is bound to what the message offered: a correctly signed click whose value
// was crafted (other labels, no signature, another button's value, another server's key) is
// refused, so it cannot silence every critical alert or capture any pod.
func TestButtonValuesNotOfferedByTheResponderAreRefused(t *testing.T) {
	key := testConfig("").buttonKey()
	offered, _ := encodeButtonValue(key, actionRerun, buttonValue{Labels: map[string]string{"alertname": "A", "pod": "p-1"}})
	other := testConfig("")
	other.SigningSecret = "another-secret"
	foreign, _ := encodeButtonValue(other.buttonKey(), actionSilence, buttonValue{Labels: map[string]string{"severity": "critical"}})
	for name, c := range map[string]struct{ action, value string }{
		"crafted labels, no signature":   {actionSilence, `{"l":{"severity":"critical"}}`},
		"labels changed after signing":   {actionRerun, strings.Replace(offered, `"p-1"`, `"p-2"`, 1)},
		"the re-run value on Capture":    {actionCapture, offered},
		"signed with another server key": {actionSilence, foreign},
	} {
		if _, err := decodeButtonValue(key, c.action, c.value); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLinksAreFilledWithTheModelAndTheAlertWindow(t *testing.T) {
	a := alert("vllm-0", notify.StatusFiring)
	got := linksText(notify.NewView(firingNotification("g", notify.Item{Alert: a}), testRender().View).Firing[0].Links)
	for _, want := range []string{
		"<http://prometheus.example/graph?g0.expr=vllm_ttft|Alert query in Prometheus>",
		"var-model=meta-llama%2FLlama-3.1-8B-Instruct",
		fmt.Sprintf("from=%d", startTS.Add(-15*60e9).UnixMilli()),
		fmt.Sprintf("to=%d", t0.UnixMilli()),
		"|Runbook>",
		fmt.Sprintf("start=%d&amp;end=%d", startTS.Add(-15*60e9).UnixMicro(), t0.UnixMicro()),
		"|Traces of slow requests>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("links lack %q:\n%s", want, got)
		}
	}
}

func TestTheRerunButtonOfAnOlderDiagnosisSaysItRunsNow(t *testing.T) {
	label := func(now time.Time) string {
		for _, b := range itemBlocks(alertView(item(playbooks.VerdictKVPreemption, "vllm-0")), now, renderOptions{Buttons: true}, false) {
			if ab, ok := b.(*slackgo.ActionBlock); ok {
				for _, e := range ab.Elements.ElementSet {
					if be := e.(*slackgo.ButtonBlockElement); be.ActionID == actionRerun {
						return be.Text.Text
					}
				}
			}
		}
		t.Fatal("no re-run button")
		return ""
	}
	if got := label(t0.Add(10 * time.Second)); got != "Re-run triage" {
		t.Errorf("fresh diagnosis: %q", got)
	}
	if got := label(t0.Add(time.Hour)); got != "Re-run triage now (this was 12:00 UTC)" {
		t.Errorf("hour-old diagnosis: %q", got)
	}
}

// A label-valued fact (a workload, an HPA) is evidence with a value, not "no data".
func TestALabelValuedFactIsShownAsItsValue(t *testing.T) {
	line := evidenceLine(evidenceRow(playbooks.Evidence{Name: "kube_workload_ref", Title: "Workload", Label: "deployment/llama", Text: "deployment/llama"}))
	if line != "• Workload: *deployment/llama*" {
		t.Fatalf("got %q", line)
	}
	if line := evidenceLine(evidenceRow(playbooks.Evidence{Name: "x", Title: "X"})); line != "• X: _no data_" {
		t.Fatalf("got %q", line)
	}
}

// alertView is the view of one firing item, as a parent message shows it.
func alertView(it notify.Item) notify.AlertView {
	return notify.NewView(firingNotification("g", it), testRender().View).Firing[0]
}

// evidenceRow is the view of one evidence line.
func evidenceRow(e playbooks.Evidence) notify.EvidenceRow {
	return notify.NewDiagnosisView(&playbooks.Diagnosis{Evidence: []playbooks.Evidence{e}}).Evidence[0]
}

// Only http(s) URLs become links (issue 33.8): an alert's generatorURL and runbook_url,
// Alertmanager's externalURL and a trace link come from outside and may be javascript: or
// data: URLs, which Slack must not be handed as links.
func TestOnlyHTTPURLsBecomeLinks(t *testing.T) {
	o := testRender()
	it := item(playbooks.VerdictCapacityPastKnee, "vllm-0")
	it.Alert.GeneratorURL = "javascript:alert(1)"
	it.Alert.Annotations["runbook_url"] = "data:text/html,<script>alert(2)</script>"
	it.Diagnosis.SlowestRequests = slowestReport()
	it.Diagnosis.SlowestRequests.SearchLink = "vbscript:msgbox(3)"
	it.Diagnosis.SlowestRequests.Requests[0].Link = "javascript:alert(4)"
	var storm []notify.Item
	for i := range testStormThreshold + 1 {
		s := item(playbooks.VerdictKVPressure, fmt.Sprintf("vllm-%d", i))
		s.Alert.GeneratorURL = "javascript:alert(5)"
		storm = append(storm, s)
	}
	parent, _ := parentOf(firingNotification("g", it), o)
	stormN := firingNotification("g", storm...)
	stormN.ExternalURL = "javascript:alert(6)"
	stormBlocks, _ := parentOf(stormN, o)
	for name, blocks := range map[string][]slackgo.Block{
		"parent": parent, "storm": stormBlocks,
		"slowest reply": slowestReply(notify.NewView(firingNotification("g", it), o.View)),
	} {
		raw, _ := json.Marshal(blocks)
		for _, bad := range []string{"javascript:", "data:text", "vbscript:"} {
			if strings.Contains(string(raw), bad) {
				t.Errorf("%s: a %s URL is in the message: %s", name, bad, raw)
			}
		}
	}
}

// Format characters in labels (issue 33.9: U+202E shows "vllm\u202egnp.exe" as "vllmexe.png",
// U+200B hides in a name) are shown, not obeyed, wherever Slack shows label text: the alert's
// heading and scope, its labels, the storm table, the resolved list and the fallback text.
func TestFormatCharactersInLabelsAreShownNotObeyed(t *testing.T) {
	o := testRender()
	hostile := func(pod string) notify.Item {
		it := item(playbooks.VerdictKVPressure, pod)
		it.Alert.Labels["alertname"] = "VLLMKV\u200bCache"
		it.Diagnosis.Scope["pod"] = pod
		return it
	}
	unmatched := notify.Item{Alert: alert("vllm\u202egnp.exe", notify.StatusFiring), Unmatched: true}
	nt := firingNotification("g", hostile("vllm\u202egnp.exe"), unmatched)
	nt.GroupLabels["alertname"] = "VLLMKV\u200bCache"
	parent, text := parentOf(nt, o)
	var storm []notify.Item
	for i := range testStormThreshold + 1 {
		storm = append(storm, hostile(fmt.Sprintf("vllm-%d\u2066", i)))
	}
	stormBlocks, _ := parentOf(firingNotification("g", storm...), o)
	resolved := notify.Item{Alert: alert("old\u202epod", notify.StatusResolved)}
	reply, _ := replyBlocks(firingNotification("g"), nil, []notify.Item{resolved}, "A", o)
	for name, blocks := range map[string][]slackgo.Block{"parent": parent, "storm": stormBlocks, "reply": reply} {
		raw := shownJSON(t, blocks)
		got := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(raw))
		for _, r := range []string{"\u202e", "\u200b", "\u2066"} {
			if strings.Contains(got, r) {
				t.Errorf("%s holds %U raw", name, []rune(r)[0])
			}
		}
		want := map[string]string{"parent": "vllm&lt;U+202E&gt;gnp.exe", "storm": "vllm-0&lt;U+2066&gt;", "reply": "old&lt;U+202E&gt;pod"}[name]
		if !strings.Contains(got, want) {
			t.Errorf("%s does not show %s: %s", name, want, got)
		}
	}
	if strings.Contains(text, "\u200b") || !strings.Contains(text, "VLLMKV&lt;U+200B&gt;Cache") {
		t.Errorf("fallback text %q", text)
	}
}

// shownJSON is the blocks as JSON without the buttons' values: what a message shows (a value
// carries the alert's labels as received, signed, back to the responder).
func shownJSON(t *testing.T, blocks []slackgo.Block) []byte {
	t.Helper()
	raw, _ := json.Marshal(blocks)
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "value")
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(generic)
	out, _ := json.Marshal(generic)
	return out
}

// testIncident is the incident of the test model: the TTFT alert of vllm-0 (a symptom) and the
// queue alert of vllm-0 (its cause), both capacity-past-knee; resolved, both resolved 25m after
// the first started (35m).
func testIncident(resolved bool) *notify.Incident {
	inc := &notify.Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "inference"},
		Opened: t0, Started: startTS, Verdict: playbooks.VerdictCapacityPastKnee, Seq: 2,
		Cause: notify.Cause{Alertname: "VLLMQueueDepthHigh", Title: "Capacity, past the knee", Summary: "Queue 84 deep and growing; queueing is 91% of TTFT.",
			Actions: []string{"Add replicas or shed load"}},
		Members: []notify.Member{
			{Fingerprint: "fp-vllm-0", Alertname: "VLLMTimeToFirstTokenP99High", Pod: "vllm-0", Verdict: playbooks.VerdictCapacityPastKnee, Role: notify.RoleSymptom,
				Summary: "Queue 84 deep and growing; queueing is 91% of TTFT.", Status: notify.StatusFiring, StartsAt: startTS},
			{Fingerprint: "q-vllm-0", Alertname: "VLLMQueueDepthHigh", Pod: "vllm-0", Verdict: playbooks.VerdictCapacityPastKnee, Role: notify.RoleCause,
				Status: notify.StatusFiring, StartsAt: startTS},
		},
		Change: notify.IncidentChange{Joined: []string{"fp-vllm-0"}}}
	if resolved {
		for i := range inc.Members {
			inc.Members[i].Status, inc.Members[i].EndsAt = notify.StatusResolved, t0.Add(25*time.Minute)
		}
		inc.Resolved, inc.Change = t0.Add(25*time.Minute), notify.IncidentChange{Resolved: true}
	}
	return inc
}
