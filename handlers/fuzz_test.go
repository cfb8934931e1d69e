package handlers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/dispatch"
)

// decodeSeeds are the fuzzers' first bodies: valid notifications, hostile values and the edges
// where two JSON decoders could differ (escapes, surrogates, invalid UTF-8, numbers, nulls, the
// case of keys, repeated keys, wrong types).
var decodeSeeds = []string{
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
	`{"version":"4","status":"firing","truncatedAlerts":1e3,"alerts":[{"labels":{"alertname":"A"}}]}`,
	`{"version":"4","status":"firing","truncatedAlerts":-1,"alerts":[{"labels":{"alertname":"A"}}]}`,
	`{"version":"4","status":"firing","truncatedAlerts":18446744073709551616,"alerts":[{"labels":{"alertname":"A"}}]}`,
	`{"version":"4","status":"firing","truncatedAlerts":"3","alerts":[{"labels":{"alertname":"A"}}]}`,
	`{"Version":"4","STATUS":"firing","Alerts":[{"Labels":{"alertname":"A"},"StartsAt":"2026-11-29T10:00:00Z"}]}`,
	`{"version":"4","version":"3","status":"firing","alerts":[{"labels":{"alertname":"A","alertname":"B"}}]}`,
	`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"\ud800x\udc00\u0000\u00e9\t"}}]}`,
	`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"A","pod":1}}]}`,
	`{"version":"4","status":"firing","alerts":[null,{"labels":null,"annotations":{"a":null}}]}`,
	`{"version":"4","status":"firing","alerts":{"labels":{"alertname":"A"}}}`,
	`{"version":"4","status":"firing","groupLabels":[],"alerts":[{"labels":{"alertname":"A"}}]}`,
	`{"version":"4","status":"firing","alerts":[{"labels":{"alertname":"A"},"startsAt":"2026-11-29T10:00:00.123456789+02:00","endsAt":null}]}`,
	`{"version":"4","status":"firing","unknown":{"x":[1,2,{"y":null}]},"alerts":[{"labels":{"alertname":"A"},"extra":true}]}`,
	` {"version":"4","status":"firing","alerts":[{"labels":{"alertname":"A"}}]}` + "\n\t ",
	"{\"version\":\"4\",\"status\":\"firing\",\"alerts\":[{\"labels\":{\"alertname\":\"a\u2028\u2029\xc3\xa9\"}}]}",
}

// FuzzDecodeMessage feeds arbitrary bodies to the webhook decoder: it must never panic, a body
// it accepts must be a usable version-4 message, and a refusal must be one clear line (it is sent
// back to the caller and logged).
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range decodeSeeds {
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

// FuzzFastDecodeMatchesEncodingJSON: the webhook's fast decoder gives, for any body, what
// encoding/json gives: the same message when both accept it, a refusal when encoding/json
// refuses it (its error text included).
func FuzzFastDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, std dispatch.Message
		errFast, errStd := unmarshal(body, &fast), json.Unmarshal(body, &std)
		switch {
		case errStd != nil && errFast == nil:
			t.Fatalf("accepted a body encoding/json refuses (%v): %q", errStd, body)
		case errStd == nil && errFast != nil:
			t.Fatalf("refused a body encoding/json accepts (%v): %q", errFast, body)
		case errStd != nil:
			if errFast.Error() != errStd.Error() {
				t.Fatalf("refusal %q, encoding/json's %q", errFast, errStd)
			}
		case !reflect.DeepEqual(fast, std):
			t.Fatalf("decoded %#v, encoding/json %#v (body %q)", fast, std, body)
		}
	})
}
