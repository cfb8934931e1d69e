// Package facts is the playbook language's facts: values a playbook reads by name that its own
// queries do not give, each from a source that looks them up beside the queries, through the
// evidence engine's query path (cache, sharing, the bound on requests in flight), only when a
// rule on the way to the verdict reads one of them. A fact is a number (nil when unknown) or a
// label value ("" when unknown).
//
// Every source has one shape (Source: its facts' names, titles, units and docs, and its lookup),
// and the sources in force are one list, in package facts/sources: kube-state-metrics (package
// kube: the pod's workload, its HPA, its pods' states, its restarts), vLLM's own label-valued
// series (package lora: `vllm:lora_requests_info`), dcgm-exporter's series of the pod's GPUs
// (package gpu: faults, throttling) and vLLM production-stack's router's (package router: the
// router in front of the pod). A playbook compiles against their Catalog;
// the evidence engine loops over the list. This package knows no source: the playbook language
// imports it alone.
package facts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// Fact is one value a playbook reads by name, in conditions and templates alike.
type Fact struct {
	Name  string
	Title string
	// Doc says what the fact is and which series it comes from (docs/playbooks/README.md lists
	// every fact with it).
	Doc string
	// Unit formats a number as a playbook query's unit does (count, s, or none).
	Unit string
	// Label marks a label value rather than a number.
	Label bool
	// Shown facts are listed as evidence when they have a value; the others feed conditions
	// and templates only.
	Shown bool
	// Query names the lookup query the fact comes from.
	Query string
	// Source names the source the fact comes from (Source.Name; set by the Catalog).
	Source string
}

// Kind says what a fact holds, for the runbooks' table: a label, a number, a number of seconds.
func (f Fact) Kind() string {
	switch {
	case f.Label:
		return "label"
	case f.Unit == "s":
		return "number, seconds"
	}
	return "number"
}

// Facts are the facts of one diagnosis' lookups, as the playbook language reads them (by name)
// and as a diagnosis' record keeps them. Sources are the lookups that were made: a fact of
// another source is unknown because it was not looked up, one of these because its source does
// not know it.
type Facts struct {
	Numbers map[string]*float64 `json:"numbers,omitempty" yaml:"numbers,omitempty"`
	Labels  map[string]string   `json:"labels,omitempty" yaml:"labels,omitempty"`
	Sources []string            `json:"sources,omitempty" yaml:"sources,omitempty"`
}

// New returns empty facts of the given sources.
func New(sources ...string) *Facts {
	return &Facts{Numbers: map[string]*float64{}, Labels: map[string]string{}, Sources: slices.Clone(sources)}
}

// Number is fact name's number (nil when unknown or f is nil).
func (f *Facts) Number(name string) *float64 {
	if f == nil {
		return nil
	}
	return f.Numbers[name]
}

// Label is fact name's label value ("" when unknown or f is nil).
func (f *Facts) Label(name string) string {
	if f == nil {
		return ""
	}
	return f.Labels[name]
}

// Looked reports whether source was looked up.
func (f *Facts) Looked(source string) bool {
	return f != nil && slices.Contains(f.Sources, source)
}

// SetNumber sets a number fact (nil leaves it unknown).
func (f *Facts) SetNumber(name string, v *float64) {
	if v != nil {
		f.Numbers[name] = v
	}
}

// SetLabel sets a label fact ("" leaves it unknown).
func (f *Facts) SetLabel(name, v string) {
	if v != "" {
		f.Labels[name] = v
	}
}

// Merge adds g's facts and sources to f (g nil: nothing).
func (f *Facts) Merge(g *Facts) {
	if g == nil {
		return
	}
	maps.Copy(f.Numbers, g.Numbers)
	maps.Copy(f.Labels, g.Labels)
	for _, s := range g.Sources {
		if !slices.Contains(f.Sources, s) {
			f.Sources = append(f.Sources, s)
		}
	}
}

// Map is f's values as a fixture writes them (From reads them back).
func (f *Facts) Map() map[string]any {
	if f == nil {
		return nil
	}
	m := make(map[string]any, len(f.Numbers)+len(f.Labels))
	for k, v := range f.Numbers {
		if v != nil {
			m[k] = *v
		}
	}
	for k, v := range f.Labels {
		m[k] = v
	}
	return m
}

// From reads recorded facts (a fixture's `kube:` or `facts:` section) into f: each name a fact
// of all, a number for a number fact, a string for a label fact.
func (f *Facts) From(all []Fact, m map[string]any) error {
	var errs []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		i := slices.IndexFunc(all, func(fc Fact) bool { return fc.Name == name })
		if i < 0 {
			errs = append(errs, fmt.Sprintf("%s: no such fact (one of %s)", name, strings.Join(names(all), ", ")))
			continue
		}
		switch v := m[name].(type) {
		case nil:
		case string:
			if !all[i].Label {
				errs = append(errs, fmt.Sprintf("%s: a number, not %q", name, v))
				continue
			}
			f.Labels[name] = v
		case int:
			if all[i].Label {
				errs = append(errs, fmt.Sprintf("%s: a label value (a string), not %d", name, v))
				continue
			}
			x := float64(v)
			f.Numbers[name] = &x
		case float64:
			if all[i].Label {
				errs = append(errs, fmt.Sprintf("%s: a label value (a string), not %g", name, v))
				continue
			}
			f.Numbers[name] = &v
		default:
			errs = append(errs, fmt.Sprintf("%s: a number or a string, not %T", name, v))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func names(all []Fact) []string {
	out := make([]string, len(all))
	for i, f := range all {
		out[i] = f.Name
	}
	return out
}

// Query is one named PromQL query of a lookup step.
type Query struct{ Name, Expr string }

// Answer is what Prometheus answered a step: each query's series (a query without series is
// absent), and why a query has no answer when it failed (rejected, timed out, unreachable).
type Answer struct {
	Vectors  map[string]model.Vector
	Problems map[string]string
}

// Asker sends a step's queries to Prometheus at one evaluation time (the evidence engine does,
// a few to a request, through its cache) and returns the answer.
type Asker func(ctx context.Context, queries []Query) Answer
