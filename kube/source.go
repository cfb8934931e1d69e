package kube

import (
	"context"
	"strings"

	"github.com/vllm-responder/vllm-responder/facts"
)

// SourceName names kube-state-metrics as a fact source (facts.Source).
const SourceName = "kube-state-metrics"

// Source is kube-state-metrics as a fact source (package facts): what it says about the
// diagnosis' pod (Config.Lookup), as the kubernetes: section configures it. It looks nothing up
// when Config is nil or not Enabled, or the diagnosis has no pod.
type Source struct{ Config *Config }

// Name implements facts.Source.
func (Source) Name() string { return SourceName }

// Facts implements facts.Source.
func (Source) Facts() []facts.Fact { return Names() }

// Lookup implements facts.Source.
func (s Source) Lookup(ctx context.Context, ask facts.Asker, subj facts.Subject) *facts.Result {
	if s.Config == nil || !s.Config.Enabled || subj.Pod == "" {
		return nil
	}
	r := s.Config.Lookup(ctx, ask, PodRef{Namespace: subj.Namespace, Name: subj.Pod}, subj.At, subj.Window)
	return &facts.Result{Facts: r.Facts(), Notes: r.Notes(), Queries: r.Queries}
}

// Notes say what kube-state-metrics lacked and which of its queries failed. A Prometheus
// without kube-state-metrics at all (a fleet outside Kubernetes, or without it) gets no note on
// every diagnosis: the verdicts that would have used the facts say so themselves (kube_missing).
func (r *Report) Notes() []string {
	var notes []string
	if r.Missing != "" && !r.Absent {
		notes = append(notes, "Kubernetes: "+r.Missing)
	}
	if len(r.Problems) > 0 {
		notes = append(notes, "kube-state-metrics queries failed: "+strings.Join(r.Problems, "; "))
	}
	return notes
}
