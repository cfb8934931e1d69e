package playbooks

import (
	"embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtin loads the playbooks embedded in the binary, compiled against cat (their rules read
// the facts of every source: facts/sources.Catalog).
func Builtin(cat *facts.Catalog) ([]*Playbook, error) {
	pbs, err := loadFS(builtinFS, "builtin", "builtin", cat)
	for _, p := range pbs {
		p.Builtin = true
	}
	return pbs, err
}

// defaultTriage is the on-demand playbook run when no alert is named.
const defaultTriage = "triage"

// Set is the playbooks in force: the built-ins, with the user's own added or overriding by name.
type Set struct {
	list   []*Playbook // user playbooks first, then built-ins, each in name order
	byName map[string]*Playbook
	triage string
}

// SetOptions configures NewSet.
type SetOptions struct {
	// Params overrides thresholds: playbook name -> param -> value.
	Params map[string]map[string]float64
	// Triage names the on-demand playbook (default "triage").
	Triage string
	// Naming renames the vLLM metrics of every query (vllm.metric_prefix) and excludes router
	// series (vllm.router_label); nil is vllmnames.Default().
	Naming *vllmnames.Naming
}

// NewSet combines built-in and user playbooks. A user playbook with a built-in's name replaces
// it. Param overrides must name an existing playbook and param, so a typo is an error, not a
// silently ignored threshold.
func NewSet(builtin, user []*Playbook, o SetOptions) (*Set, error) {
	s := &Set{byName: map[string]*Playbook{}, triage: o.Triage}
	if s.triage == "" {
		s.triage = defaultTriage
	}
	var errs []error
	seenUser := map[string]string{}
	for _, p := range user {
		if prev, ok := seenUser[p.Name]; ok {
			errs = append(errs, fmt.Errorf("%s: name %q already used by %s", p.Source, p.Name, prev))
			continue
		}
		seenUser[p.Name] = p.Source
		s.byName[p.Name] = p
	}
	for _, p := range builtin {
		if _, overridden := s.byName[p.Name]; !overridden {
			s.byName[p.Name] = p
		}
	}
	for _, name := range sortedKeys(o.Params) {
		p, ok := s.byName[name]
		if !ok {
			errs = append(errs, fmt.Errorf("playbooks.params.%s: no playbook named %q", name, name))
			continue
		}
		cp := *p
		cp.Params = make(map[string]float64, len(p.Params))
		for k, v := range p.Params {
			cp.Params[k] = v
		}
		for _, k := range sortedKeys(o.Params[name]) {
			if _, ok := p.Params[k]; !ok {
				errs = append(errs, fmt.Errorf("playbooks.params.%s.%s: playbook %s has no param %q (it has: %s)",
					name, k, name, k, strings.Join(p.ParamOrder, ", ")))
				continue
			}
			cp.Params[k] = o.Params[name][k]
		}
		s.byName[name] = &cp
	}
	naming := vllmnames.Default()
	if o.Naming != nil {
		naming = *o.Naming
	}
	for _, name := range sortedKeys(s.byName) {
		p, err := s.byName[name].withNaming(naming)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.byName[name] = p
	}
	if _, ok := s.byName[s.triage]; !ok {
		errs = append(errs, fmt.Errorf("playbooks.triage: no playbook named %q", s.triage))
	}
	for _, name := range sortedKeys(s.byName) {
		p := s.byName[name]
		if !p.Builtin {
			s.list = append(s.list, p)
		}
	}
	for _, name := range sortedKeys(s.byName) {
		if p := s.byName[name]; p.Builtin {
			s.list = append(s.list, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Match returns the playbook for an alert: the first, user playbooks before built-ins, whose
// matchers all hold.
func (s *Set) Match(labels map[string]string) (*Playbook, bool) {
	for _, p := range s.list {
		if p.matches(labels) {
			return p, true
		}
	}
	return nil, false
}

// Triage returns the on-demand playbook.
func (s *Set) Triage() *Playbook { return s.byName[s.triage] }

// Get returns a playbook by name.
func (s *Set) Get(name string) (*Playbook, bool) { p, ok := s.byName[name]; return p, ok }

// All returns every playbook in matching order.
func (s *Set) All() []*Playbook { return slices.Clone(s.list) }

// AlertNames returns the alertname values the playbooks match by equality, sorted.
func (s *Set) AlertNames() []string {
	var out []string
	for _, p := range s.list {
		for _, m := range p.Matchers {
			if m.Name == "alertname" && m.Type == MatchEqual {
				out = append(out, m.Value)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
