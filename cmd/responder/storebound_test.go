package main

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/store"
)

// Without Redis the in-memory store says on /metrics what it holds against its bound, and what a
// diagnosed webhook leaves in it shows there.
func TestTheInMemoryStoreShowsWhatItHoldsAgainstItsBound(t *testing.T) {
	t.Parallel()
	url, out := startResponder(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "")
	if got := metricValue(t, url, "vllm_responder_store_memory_max_bytes"); got != strconv.FormatFloat(store.MemoryMaxBytes, 'g', -1, 64) &&
		got != fmt.Sprint(store.MemoryMaxBytes) {
		t.Fatalf("vllm_responder_store_memory_max_bytes = %q; want %d", got, store.MemoryMaxBytes)
	}
	mustAccept(t, postHook(url, webhook("g-store", "VLLMKVCacheNearFull", "vllm-0", "f-store")), 1, 0)
	testenv.WaitFor(t, 30*time.Second, "the diagnosis posted and its records kept", func() bool {
		b, _ := strconv.ParseFloat(metricValue(t, url, "vllm_responder_store_memory_bytes"), 64)
		n, _ := strconv.ParseFloat(metricValue(t, url, "vllm_responder_store_memory_entries"), 64)
		return out.String() != "" && b > 0 && n > 0
	})
}
