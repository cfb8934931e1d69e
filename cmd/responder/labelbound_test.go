package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// On the webhook path an alert whose pod label is longer than promql.MaxLabelValue is not lost:
// it is posted with a diagnosis that says the label is too long, and no query is sent (the
// Prometheus here is unreachable, so a query sent would read "Prometheus unreachable").
func TestAnAlertWithALabelPastTheBoundIsPostedSayingSo(t *testing.T) {
	t.Parallel()
	url, out := startResponder(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "")
	pod := "vllm-" + strings.Repeat("x", 16<<10)
	mustAccept(t, postHook(url, webhook("g-long", "VLLMKVCacheNearFull", pod, "f-long")), 1, 0)
	testenv.WaitFor(t, 30*time.Second, "the alert posted with its diagnosis", func() bool {
		return strings.Contains(out.String(), "Label value too long: no query sent")
	})
	if s := out.String(); !strings.Contains(s, "VLLMKVCacheNearFull") || strings.Contains(s, "unreachable") {
		t.Fatalf("the console shows:\n%.2000s", s)
	}
}
