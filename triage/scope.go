package triage

// A triage that names no model would sum every model's series into one diagnosis: a verdict from
// one model's pods beside a "worst pod" of another, or, for a pod named alone, the pod compared
// with every pod of its namespace (an overloaded model's only pod read as load-imbalance beside
// another model's idle pod). So the scope's models are listed first, those of the pod's own
// series when a pod is named. One model: the triage is scoped to it. Several: each is triaged,
// and the diagnosis is the one of the model with the most severe verdict, scoped to it end to end
// (evidence, fleet, summary), naming it and listing the others with their verdicts. More than
// maxModels: the user is asked to name one.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// maxModels is how many models a triage that names none diagnoses one by one to choose from;
// with more it asks for one.
const maxModels = 10

const (
	modelLabel     = "model_name"
	namespaceLabel = "namespace"
)

// modelLabels are the labels that tell the scope's models apart when the request names no model:
// model_name, and namespace when the playbook scopes by it and the request names none. Empty:
// the request is about one model already, or p cannot be scoped to one. A pod named alone is
// scoped the same way: its model comes from its own series (models selects by the whole scope,
// the pod included).
func (s *Service) modelLabels(p *playbooks.Playbook, labels map[string]string) []string {
	if labels[modelLabel] != "" || !slices.Contains(p.Scope, modelLabel) {
		return nil
	}
	by := []string{modelLabel}
	if labels[namespaceLabel] == "" && slices.Contains(p.Scope, namespaceLabel) {
		by = append(by, namespaceLabel)
	}
	return by
}

// scopeLabels are modelLabels, and, when triage.namespaces bounds the namespaces and the request
// names none, model_name and namespace whatever the request names: the models are then listed by
// namespace and only those in the bound are triaged (run). A playbook that cannot be scoped by
// namespace is refused then: its queries would read every namespace.
func (s *Service) scopeLabels(p *playbooks.Playbook, labels map[string]string) ([]string, error) {
	if len(s.o.Namespaces) == 0 || labels[namespaceLabel] != "" {
		return s.modelLabels(p, labels), nil
	}
	if !slices.Contains(p.Scope, namespaceLabel) {
		return nil, fmt.Errorf("playbook %s does not scope its queries by namespace, so triage.namespaces cannot bound it", p.Name)
	}
	if !slices.Contains(p.Scope, modelLabel) {
		return []string{namespaceLabel}, nil
	}
	return []string{modelLabel, namespaceLabel}, nil
}

// candidate is one model of the scope: its labels (by) and its mean queue, which orders models
// of equally severe verdicts.
type candidate struct {
	labels  map[string]string
	waiting float64
}

// models lists the scope's models: those with vLLM series in the playbook's window up to at,
// the most queued first.
func (s *Service) models(ctx context.Context, p *playbooks.Playbook, labels map[string]string, by []string, at time.Time) ([]candidate, error) {
	matchers, _, _ := (playbooks.PodScope{Label: s.o.Naming.PodLabel}).Matchers(p.Scope, labels)
	q := fmt.Sprintf("sum by (%s) (avg_over_time(%s[%s]))", strings.Join(by, ", "),
		s.o.Naming.Selector("vllm:num_requests_waiting", matchers), model.Duration(p.Window))
	if at.IsZero() {
		at = time.Now()
	}
	v, err := s.o.Querier.Query(ctx, q, at)
	if err != nil {
		return nil, modelsError(ctx, err)
	}
	vec, _ := v.(model.Vector)
	var out []candidate
	for _, smp := range vec {
		c := candidate{labels: map[string]string{}, waiting: float64(smp.Value)}
		for _, l := range by {
			if v := string(smp.Metric[model.LabelName(l)]); v != "" {
				c.labels[l] = v
			}
		}
		if c.labels[modelLabel] == "" && slices.Contains(by, modelLabel) || len(c.labels) < len(by) {
			continue // series without a model_name (or namespace): nothing to scope to
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b candidate) int {
		if a.waiting != b.waiting {
			return cmp.Compare(b.waiting, a.waiting)
		}
		return strings.Compare(describe(a.labels), describe(b.labels))
	})
	return out, nil
}

// modelsError words a failed listing as the engine words a failed run: a query Prometheus
// rejected is a bug here, a passed deadline says so, anything else is Prometheus unreachable.
func modelsError(ctx context.Context, err error) error {
	var apiErr *v1.Error
	switch {
	case errors.As(err, &apiErr) && (apiErr.Type == v1.ErrBadData || apiErr.Type == v1.ErrExec):
		return fmt.Errorf("listing the models in scope: query rejected by Prometheus: %s", apiErr.Msg)
	case ctx.Err() != nil:
		return fmt.Errorf("listing the models in scope: %w", context.Cause(ctx))
	}
	return &evidence.UnavailableError{Reason: err.Error()}
}

// runModels runs p for each model and returns the diagnosis of the one with the most severe
// verdict, scoped to it, naming the others.
func (s *Service) runModels(ctx context.Context, p *playbooks.Playbook, labels map[string]string, models []candidate, at time.Time) (*Result, error) {
	switch {
	case len(models) == 0:
		d, err := s.o.Engine.RunAt(ctx, p, labels, at)
		return &Result{Diagnosis: d}, err
	case len(models) > maxModels:
		names := make([]string, 0, maxModels)
		for _, m := range models[:maxModels] {
			names = append(names, describe(m.labels))
		}
		return nil, fmt.Errorf("%d models in scope and the request names none: name one (model_name): %s, ...", len(models), strings.Join(names, ", "))
	}
	type run struct {
		d   *playbooks.Diagnosis
		err error
	}
	runs := make([]run, len(models))
	var wg sync.WaitGroup
	for i, m := range models {
		wg.Go(func() {
			scoped := maps.Clone(labels)
			maps.Copy(scoped, m.labels)
			runs[i].d, runs[i].err = s.o.Engine.RunAt(ctx, p, scoped, at)
		})
	}
	wg.Wait()
	order := make([]int, len(models))
	for i := range order {
		order[i] = i
		if runs[i].err != nil {
			return nil, runs[i].err
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(severity(runs[a].d.Verdict), severity(runs[b].d.Verdict)) })
	chosen := runs[order[0]].d
	res := &Result{Diagnosis: chosen}
	var others []string
	for _, i := range order {
		m := models[i]
		res.Models = append(res.Models, Model{Name: m.labels[modelLabel], Namespace: m.labels[namespaceLabel],
			Verdict: runs[i].d.Verdict, Title: runs[i].d.Title, Diagnosed: i == order[0]})
		if i != order[0] {
			others = append(others, fmt.Sprintf("%s (%s)", describe(m.labels), runs[i].d.Verdict))
		}
	}
	note := s.scopeNote(p, labels, models, order, others)
	if len(models) == 1 {
		res.Models = nil
	}
	chosen.Notes = append([]string{note}, chosen.Notes...)
	return res, nil
}

// scopeNote is the first note of a diagnosis chosen among models: what the request did not name,
// and which model (and namespace) the diagnosis is about, with the others and their verdicts.
func (s *Service) scopeNote(p *playbooks.Playbook, labels map[string]string, models []candidate, order []int, others []string) string {
	pod := s.namedPod(p, labels)
	chosen := describe(models[order[0]].labels)
	switch {
	case labels[modelLabel] != "" && len(models) == 1:
		return fmt.Sprintf("the request named no namespace: this diagnosis is about %s, the only one in the namespaces triage reads (triage.namespaces)", chosen)
	case labels[modelLabel] != "":
		return fmt.Sprintf("the request named no namespace and %d are in scope: this diagnosis is about %s, whose verdict is the most severe; "+
			"the others: %s. Name one (namespace) to triage it", len(models), chosen, strings.Join(others, ", "))
	case pod != "" && len(models) == 1:
		return fmt.Sprintf("the request named pod %q and no model: this diagnosis is about %s, the model of the pod's own series", pod, chosen)
	case pod != "":
		return fmt.Sprintf("pod %q has series of %d models: this diagnosis is about %s, whose verdict is the most severe; "+
			"the others: %s. Name one (model_name, or the namespace) to triage it", pod, len(models), chosen, strings.Join(others, ", "))
	case len(models) == 1:
		return fmt.Sprintf("the request named no model: this diagnosis is about %s, the only model in scope", chosen)
	}
	return fmt.Sprintf("the request named no model and %d are in scope: this diagnosis is about %s, whose verdict is the most severe; "+
		"the others: %s. Name one (model_name) to triage it", len(models), chosen, strings.Join(others, ", "))
}

// namedPod is the pod the request names, as p's scope selects it ("" when none).
func (s *Service) namedPod(p *playbooks.Playbook, labels map[string]string) string {
	if !slices.Contains(p.Scope, "pod") {
		return ""
	}
	_, used, _ := (playbooks.PodScope{Label: s.o.Naming.PodLabel}).Matchers([]string{"pod"}, labels)
	for _, v := range used {
		return v
	}
	return ""
}

// severity orders verdicts for choosing among models by their class (playbooks.Class.Urgency):
// a named problem first, then one no rule explains, then healthy, then no data.
func severity(verdict string) int { return playbooks.ClassOf(verdict).Urgency() }

// describe names a model by its labels: model_name="m" namespace="ns".
func describe(labels map[string]string) string {
	parts := []string{fmt.Sprintf("%s=%q", modelLabel, labels[modelLabel])}
	if ns := labels[namespaceLabel]; ns != "" {
		parts = append(parts, fmt.Sprintf("%s=%q", namespaceLabel, ns))
	}
	return strings.Join(parts, " ")
}
