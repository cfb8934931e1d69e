package playbooks

import (
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
)

func builtinSet(t testing.TB) *Set {
	t.Helper()
	pbs, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSet(pbs, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuiltinPlaybooksLoad(t *testing.T) {
	pbs, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	if len(pbs) != 10 {
		t.Fatalf("want 10 built-in playbooks, got %d", len(pbs))
	}
	s, err := NewSet(pbs, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, alert := range []string{"VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High", "VLLMSpecDecodeAcceptanceDropped",
		"VLLMKVCacheNearFull", "VLLMRequestAbortRateHigh", "VLLMKVTransferFailing", "VLLMQueueDepthHigh", "VLLMEngineStalled", "VLLMGPUFault"} {
		if _, ok := s.Match(map[string]string{"alertname": alert}); !ok {
			t.Errorf("no built-in playbook matches %s", alert)
		}
	}
	if s.Triage() == nil || !s.Triage().OnDemand {
		t.Error("the on-demand triage playbook is missing")
	}
}
