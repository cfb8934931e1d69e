package facts

import (
	"context"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Source is one source of facts: it says which facts it gives (their names, titles, units and
// docs) and looks them up for a diagnosis' pod, through the asker the evidence engine gives it.
// The sources in force are one list (package facts/sources): adding a source is a new package
// that implements Source and one line in that list.
type Source interface {
	// Name names the source in a diagnosis' record (Facts.Sources) and in a playbook's errors
	// ("kube_node: a kube-state-metrics fact").
	Name() string
	// Facts lists the source's facts, in the order the runbooks list them (Fact.Source is set
	// by the catalog).
	Facts() []Fact
	// Lookup looks the facts up for s, sending its queries through ask, and returns what it
	// found; nil when it makes no lookup (it is turned off, or s lacks what it needs, such as
	// a pod). Its queries' failures are said in the result's notes, never returned as errors:
	// a diagnosis decides without the facts it could not get.
	Lookup(ctx context.Context, ask Asker, s Subject) *Result
}

// Subject is what a lookup is about: the diagnosis' pod, as of its evaluation time.
type Subject struct {
	// Namespace and Pod name the pod: the alert's (by the pod scope's label), or the pod the
	// fleet puts first when the alert names none. Pod is "" when there is none, Namespace when
	// the alert's labels have none (the pod's series then name it).
	Namespace, Pod string
	// Series returns the selector of a vLLM metric's series of the pod, by namespace and pod
	// only (the API server's families have no model_name), named and labelled as every vLLM
	// query is (vllm.metric_prefix, the pod label, router series left out); "" when there is
	// no pod. It selects by the instance where the alert names the pod by its instance only.
	Series func(metric string) string
	// At is the evaluation time, Window the playbook's window.
	At     time.Time
	Window time.Duration
}

// Result is what one lookup found.
type Result struct {
	// Facts are the facts found, Facts.Sources naming the source.
	Facts *Facts
	// Notes say what the source lacked and which of its queries failed, for the diagnosis'
	// notes.
	Notes []string
	// Queries are the PromQL sent, by query name (Fact.Query), for the evidence.
	Queries map[string]string
}

// Catalog is what a playbook may read beyond its queries: every fact of the sources in force,
// in the sources' order. A playbook is compiled against one (nil: none), and a fixture's facts
// are read with it.
type Catalog struct {
	facts   []Fact
	sources []string
	words   *regexp.Regexp // any fact's name as a word
	known   *Facts         // Known
}

// NewCatalog is the catalog of sources' facts, in order. Fact names are one namespace: a name
// given by two sources, or one that a playbook could not read by name, is a programming error
// in the list of sources, and NewCatalog panics on it.
func NewCatalog(sources ...Source) *Catalog {
	c := &Catalog{}
	var alts []string
	for _, src := range sources {
		c.sources = append(c.sources, src.Name())
		for _, f := range src.Facts() {
			if !nameRE.MatchString(f.Name) {
				panic(fmt.Sprintf("facts: %s gives a fact named %q: not a playbook name (lower-case letters, digits, _)", src.Name(), f.Name))
			}
			if g, dup := c.Fact(f.Name); dup {
				panic(fmt.Sprintf("facts: %s and %s both give a fact named %s", g.Source, src.Name(), f.Name))
			}
			f.Source = src.Name()
			c.facts = append(c.facts, f)
			alts = append(alts, regexp.QuoteMeta(f.Name))
		}
	}
	if len(alts) > 0 {
		c.words = regexp.MustCompile(`\b(` + strings.Join(alts, "|") + `)\b`)
	}
	c.known = New(c.sources...)
	one := 1.0
	for _, f := range c.facts {
		if f.Label {
			c.known.Labels[f.Name] = "x"
		} else {
			c.known.Numbers[f.Name] = &one
		}
	}
	return c
}

var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Facts lists every fact, in order (c nil: none).
func (c *Catalog) Facts() []Fact {
	if c == nil {
		return nil
	}
	return slices.Clone(c.facts)
}

// All yields every fact, in order, without a copy of the list (c nil: none).
func (c *Catalog) All() iter.Seq[Fact] {
	return func(yield func(Fact) bool) {
		if c == nil {
			return
		}
		for _, f := range c.facts {
			if !yield(f) {
				return
			}
		}
	}
}

// Known are facts of every source with every fact known (a label "x", a number 1), for the
// checks a playbook's loader makes: conditions compile and templates run against them. They
// are shared: read them, never change them (c nil: nil, no fact).
func (c *Catalog) Known() *Facts {
	if c == nil {
		return nil
	}
	return c.known
}

// Sources names the sources, in order (c nil: none).
func (c *Catalog) Sources() []string {
	if c == nil {
		return nil
	}
	return slices.Clone(c.sources)
}

// Fact is the fact of that name.
func (c *Catalog) Fact(name string) (Fact, bool) {
	if c == nil {
		return Fact{}, false
	}
	i := slices.IndexFunc(c.facts, func(f Fact) bool { return f.Name == name })
	if i < 0 {
		return Fact{}, false
	}
	return c.facts[i], true
}

// Of lists the facts of one source, in order.
func (c *Catalog) Of(source string) []Fact {
	var out []Fact
	for _, f := range c.Facts() {
		if f.Source == source {
			out = append(out, f)
		}
	}
	return out
}

// SourcesRead lists the sources whose facts text names as words (a condition such as
// `kube_hpa_max >= 3`, a template's `{{ .kube_hpa }}` or `$.kube_node`), in the order first
// named.
func (c *Catalog) SourcesRead(text string) []string {
	if c == nil || c.words == nil {
		return nil
	}
	var out []string
	for _, name := range c.words.FindAllString(text, -1) {
		if f, _ := c.Fact(name); !slices.Contains(out, f.Source) {
			out = append(out, f.Source)
		}
	}
	return out
}
