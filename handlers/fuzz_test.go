package handlers

import (
	"strings"
	"testing"
)

// FuzzDecodeMessage feeds arbitrary bodies to the webhook decoder: it must never panic, a body
// it accepts must be a usable version-4 message, and a refusal must be one clear line (it is sent
// back to the caller and logged).
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"version":"4","groupKey":"g","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"http://am","alerts":[{"status":"firing","labels":{"alertname":"VLLMKVCacheNearFull","pod":"p"},"annotations":{},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","fingerprint":"f1"}]}`,
		`{"version":"4","status":"resolved","alerts":[{"labels":{"alertname":"A"},"status":"resolved"}]}`,
		`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"A","pod":"\"} or vector(1) #"}}]}`,
		`{"version":"3","status":"firing","alerts":[]}`,
		`{"version":"4","status":"firing","alerts":[{"labels":{}}]}`,
		`{"version":"4","status":"weird","alerts":[{"labels":{"alertname":"A"}}]}`,
		`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"A"},"startsAt":"not a time"}]}`,
		`{"version":"4"}`,
		`{"version":"4","status":"firing","alerts":null}`,
		`{} {}`,
		`[`,
		`null`,
		``,
		"{\"version\":\"4\",\"status\":\"firing\",\"alerts\":[{\"labels\":{\"alertname\":\"\xff\xfe\"}}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msg, err := DecodeMessage(body)
		if err != nil {
			if msg != nil {
				t.Fatalf("an error and a message: %v", err)
			}
			e := err.Error()
			if e == "" || strings.ContainsAny(e, "\n\r") {
				t.Fatalf("error is not one clear line: %q", e)
			}
			return
		}
		if msg == nil || msg.Data == nil {
			t.Fatal("accepted a message without data")
		}
		if msg.Version != "4" || (msg.Status != "firing" && msg.Status != "resolved") || len(msg.Alerts) == 0 {
			t.Fatalf("accepted an unusable message: version %q status %q, %d alerts", msg.Version, msg.Status, len(msg.Alerts))
		}
		for i, a := range msg.Alerts {
			if a.Labels["alertname"] == "" {
				t.Fatalf("alerts[%d] accepted without alertname", i)
			}
		}
	})
}
