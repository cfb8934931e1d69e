package kube

import (
	"context"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/facts"
)

// A source that is off, or has no pod to look up, asks Prometheus nothing and says so (nil); one
// that is on asks about the subject's pod, as of its time.
func TestKubeStateMetricsAsASourceLooksUpOnlyWhenOnAndGivenAPod(t *testing.T) {
	on := &Config{}
	on.SetDefaults()
	if err := on.Validate(); err != nil {
		t.Fatal(err)
	}
	off := *on
	off.Enabled = false
	var asked []string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		for _, q := range qs {
			asked = append(asked, q.Expr)
		}
		return facts.Answer{}
	}
	pod := facts.Subject{Namespace: "llm", Pod: "vllm-0", At: time.Unix(1700000000, 0), Window: 5 * time.Minute}
	for _, tc := range []struct {
		name string
		src  Source
		subj facts.Subject
	}{
		{"no config", Source{}, pod},
		{"turned off", Source{Config: &off}, pod},
		{"no pod", Source{Config: on}, facts.Subject{Namespace: "llm"}},
	} {
		if r := tc.src.Lookup(context.Background(), ask, tc.subj); r != nil || len(asked) > 0 {
			t.Errorf("%s: looked up %+v, asked %q", tc.name, r, asked)
		}
	}
	r := Source{Config: on}.Lookup(context.Background(), ask, pod)
	if r == nil || len(asked) == 0 || r.Queries["pod_owner"] != `kube_pod_owner{namespace="llm",pod="vllm-0"}` {
		t.Fatalf("on: %+v, asked %q", r, asked)
	}
	if !r.Facts.Looked(SourceName) || r.Facts.Number("kube_found") == nil || *r.Facts.Number("kube_found") != 0 {
		t.Errorf("facts of a pod kube-state-metrics does not know: %+v", r.Facts)
	}
}
