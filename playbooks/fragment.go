package playbooks

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Fragments: a part of several playbooks, said once. A fragment file (`fragment: NAME`) holds
// params, queries, named templates and conditions, a fleet section and verdicts, as a playbook
// does, and the scope its rules read, but no name, match, window or charts: it is not run on its
// own. A playbook takes it with one line, `uses: [NAME]`, and the compiler merges it in before
// anything is compiled:
//
//   - params, queries, fleet queries, named templates and named conditions are merged by name.
//     A name two of the parts define is an error naming both files and lines, with two
//     exceptions: a playbook may set a fragment's param to its own value (as the config's
//     playbooks.params does), and a query, fleet query or rule written with `override: NAME`
//     replaces fragment NAME's entry of that name in its place (a rule is matched by its
//     `name:`). An override of a name the fragment does not define is an error: nothing is
//     shadowed by accident, nothing overridden in vain.
//   - a fragment's verdicts stand ahead of the playbook's own, in the order of uses (the gate:
//     restarts, pauses and stalls are decided before anything else), or where the playbook's
//     verdicts write `- ...NAME`.
//   - a fragment's queries (and fleet queries) stand after the playbook's own, or where the
//     playbook's section writes `...NAME:` (the evidence is listed in that order).
//   - a fragment's fleet settings (by, focus, affected, columns) hold unless the playbook sets
//     its own; its scope is the playbook's when the playbook sets none, and must be in it when
//     it does.
//   - `NAME: {from: FRAGMENT}` among a playbook's queries takes one query of a fragment it does
//     not use whole (the `series` library), in its place.
//
// The merged playbook is then compiled as if it had been written in one file; an error in a
// fragment's part names the fragment's file and the playbook that uses it. Falco's rules files
// (macros, lists and `override:`) and Helm's named templates are the models.

// fragment is a decoded fragment file.
type fragment struct {
	name   string
	source string
	file   *File
}

// fragments are the fragments playbooks may use, by name.
type fragments map[string]*fragment

// names are the fragments' names, sorted.
func (fs fragments) names() []string { return sortedKeys(fs) }

// parseFragment checks a decoded fragment file on its own: what a fragment may hold, its names
// unique. Its entries are marked with its source, so that errors found once it is merged into a
// playbook name the fragment's file.
func parseFragment(source string, f *File) (*fragment, error) {
	el := newErrList(source)
	if !playbookNameRE.MatchString(f.Fragment) {
		el.add("fragment", "%q must be lower-case letters, digits and dashes", f.Fragment)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"name", f.Name != ""}, {"match", len(f.Match) > 0}, {"on_demand", f.OnDemand}, {"window", f.Window != ""},
		{"charts", len(f.Charts) > 0}, {"uses", len(f.Uses) > 0}, {"labels", !f.Labels.IsZero()}} {
		if k.set {
			el.add(k.key, "a fragment has no %s: the playbooks that use it do", k.key)
		}
	}
	seen := map[string]int{}
	once := func(path, kind, name string, line int) {
		if first, ok := seen[kind+" "+name]; ok {
			el.add(path, "defined twice (lines %d and %d)", first, line)
			return
		}
		seen[kind+" "+name] = line
	}
	for i := range f.Params {
		f.Params[i].Source = source
		once("params."+f.Params[i].Name, "param", f.Params[i].Name, f.Params[i].Line)
	}
	markQueries := func(section string, qs orderedQueries) {
		for i := range qs {
			nq := &qs[i]
			nq.Source = source
			switch {
			case nq.Spread != "":
				el.add(section+"."+spreadPrefix+nq.Spread, "line %d: a fragment uses no fragment", nq.Line)
			case nq.Query.Override != "":
				el.add(section+"."+nq.Name+".override", "line %d: a fragment overrides nothing: the playbooks that use it do", nq.Line)
			default:
				once(section+"."+nq.Name, section, nq.Name, nq.Line)
			}
		}
	}
	markQueries("queries", f.Queries)
	if f.Fleet != nil {
		markQueries("fleet.queries", f.Fleet.Queries)
	}
	for i := range f.Templates {
		f.Templates[i].Source = source
		once("templates."+f.Templates[i].Name, "template", f.Templates[i].Name, f.Templates[i].Line)
	}
	for i := range f.Conditions {
		f.Conditions[i].Source = source
		once("conditions."+f.Conditions[i].Name, "condition", f.Conditions[i].Name, f.Conditions[i].Line)
	}
	for i := range f.Verdicts {
		v := &f.Verdicts[i]
		v.Source = source
		path := fmt.Sprintf("verdicts[%d]", i)
		switch {
		case v.Spread != "":
			el.add(path, "line %d: a fragment uses no fragment", v.Line)
		case v.Override != "":
			el.add(path+".override", "line %d: a fragment overrides nothing: the playbooks that use it do", v.Line)
		case v.Name != "":
			once(path+".name", "rule", v.Name, v.Line)
		}
	}
	if err := el.err(); err != nil {
		return nil, err
	}
	return &fragment{name: f.Fragment, source: source, file: f}, nil
}

// where names an entry's place for a message: "common/progress.yaml line 30".
func where(source string, line int) string { return fmt.Sprintf("%s line %d", source, line) }

// merge returns f with the fragments it uses merged in (see the package comment above), or f
// itself when it uses none. The errors are the playbook's: which fragment is unknown, which
// name is defined twice, which override replaces nothing.
func merge(el *errList, f *File, lib fragments) *File {
	var used []*fragment
	for i, name := range f.Uses {
		fr, ok := lib[name]
		switch {
		case !ok:
			el.add(fmt.Sprintf("uses[%d]", i), "unknown fragment %q (known: %s)", name, strings.Join(lib.names(), ", "))
		case slices.ContainsFunc(used, func(u *fragment) bool { return u.name == name }):
			el.add(fmt.Sprintf("uses[%d]", i), "fragment %q used twice", name)
		default:
			used = append(used, fr)
		}
	}
	out := *f
	out.Scope = mergeScope(el, f.Scope, used)
	out.Params = mergeParams(el, f.Params, used)
	out.Queries = mergeQueries(el, "queries", f.Queries, used, lib, func(g *File) orderedQueries { return g.Queries })
	out.Templates = mergeTemplates(el, "templates", f.Templates, used, func(g *File) orderedTemplates { return g.Templates })
	out.Conditions = mergeTemplates(el, "conditions", f.Conditions, used, func(g *File) orderedTemplates { return g.Conditions })
	out.Fleet = mergeFleet(el, f.Fleet, used, lib)
	out.Verdicts = mergeVerdicts(el, f.Verdicts, used)
	return &out
}

// kindOf names what a section holds, for messages.
func kindOf(section string) string {
	return map[string]string{"queries": "query", "fleet.queries": "fleet query", "templates": "template", "conditions": "condition"}[section]
}

// owners maps every name a section of the used fragments defines to the fragment and line that
// define it; a name two fragments define is reported.
func owners[T any](el *errList, kind string, used []*fragment, entries func(*File) []T, key func(T) (string, int)) map[string]ownerOf {
	out := map[string]ownerOf{}
	for _, fr := range used {
		for _, e := range entries(fr.file) {
			name, line := key(e)
			if name == "" {
				continue
			}
			if prev, ok := out[name]; ok {
				el.add("uses", "fragments %s and %s both define %s %q (%s, %s)", prev.frag.name, fr.name, kind, name,
					where(prev.frag.source, prev.line), where(fr.source, line))
				continue
			}
			out[name] = ownerOf{fr, line}
		}
	}
	return out
}

type ownerOf struct {
	frag *fragment
	line int
}

// mergeScope: a fragment's scope is the alert labels its queries and texts read. A playbook that
// sets no scope takes its fragments' (in order, each label once); one that sets its own must
// hold theirs.
func mergeScope(el *errList, own []string, used []*fragment) []string {
	if len(own) == 0 {
		var out []string
		for _, fr := range used {
			for _, l := range fr.file.Scope {
				if !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		}
		return out
	}
	for _, fr := range used {
		for _, l := range fr.file.Scope {
			if !slices.Contains(own, l) {
				el.add("scope", "fragment %s reads the alert's label %s (its scope: %s): add it", fr.name, l, strings.Join(fr.file.Scope, ", "))
			}
		}
	}
	return own
}

// mergeParams: the playbook's params, then the fragments' others; a playbook's param of a
// fragment's name sets that param's value.
func mergeParams(el *errList, own orderedFloats, used []*fragment) orderedFloats {
	owner := owners(el, "param", used, func(g *File) []namedFloat { return g.Params }, func(p namedFloat) (string, int) { return p.Name, p.Line })
	out := slices.Clone(own)
	for _, fr := range used {
		for _, p := range fr.file.Params {
			if owner[p.Name].frag != fr || slices.ContainsFunc(own, func(o namedFloat) bool { return o.Name == p.Name }) {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// mergeQueries merges a query section (queries or fleet.queries): the playbook's own entries in
// their order, each fragment's block where a spread places it (else after them), an override in
// the place of the entry it replaces.
func mergeQueries(el *errList, section string, own orderedQueries, used []*fragment, lib fragments, of func(*File) orderedQueries) orderedQueries {
	owner := owners(el, kindOf(section), used, func(g *File) []namedQuery { return of(g) }, func(q namedQuery) (string, int) { return q.Name, q.Line })
	replaced := map[string]namedQuery{} // query name -> the playbook's override
	placed := map[string]bool{}
	var kept orderedQueries
	for _, nq := range own {
		if nq.Query.From != "" {
			var ok bool
			if nq, ok = takeFrom(el, section, nq, used, lib, of); !ok {
				continue
			}
		}
		kept = append(kept, nq)
	}
	own = kept
	dropped := map[int]bool{} // own entries reported as clashing, left out
	for i, nq := range own {
		switch {
		case nq.Spread != "":
			if !slices.ContainsFunc(used, func(u *fragment) bool { return u.name == nq.Spread }) {
				el.add(section+"."+spreadPrefix+nq.Spread, "line %d: this playbook does not use fragment %q", nq.Line, nq.Spread)
			} else if placed[nq.Spread] {
				el.add(section+"."+spreadPrefix+nq.Spread, "line %d: placed twice", nq.Line)
			}
			placed[nq.Spread] = true
		case nq.Query.Override != "":
			o, ok := owner[nq.Name]
			switch {
			case !slices.ContainsFunc(used, func(u *fragment) bool { return u.name == nq.Query.Override }):
				el.add(section+"."+nq.Name+".override", "line %d: this playbook does not use fragment %q", nq.Line, nq.Query.Override)
			case !ok || o.frag.name != nq.Query.Override:
				el.add(section+"."+nq.Name+".override", "line %d: fragment %s has no %s %q to override", nq.Line, nq.Query.Override, kindOf(section), nq.Name)
			default:
				replaced[nq.Name] = nq
			}
		default:
			if o, ok := owner[nq.Name]; ok {
				el.add(section+"."+nq.Name, "line %d: also defined by fragment %s (%s): to replace it, write override: %s",
					nq.Line, o.frag.name, where(o.frag.source, o.line), o.frag.name)
				dropped[i] = true
			}
		}
	}
	block := func(fr *fragment) orderedQueries {
		var out orderedQueries
		for _, nq := range of(fr.file) {
			if owner[nq.Name].frag != fr {
				continue
			}
			if r, ok := replaced[nq.Name]; ok {
				nq = r
			}
			out = append(out, nq)
		}
		return out
	}
	var out orderedQueries
	for i, nq := range own {
		switch {
		case nq.Spread != "":
			if i := slices.IndexFunc(used, func(u *fragment) bool { return u.name == nq.Spread }); i >= 0 {
				out = append(out, block(used[i])...)
			}
		case nq.Query.Override != "", dropped[i]:
			// in the place of the entry it replaces; or reported
		default:
			out = append(out, nq)
		}
	}
	for _, fr := range used {
		if !placed[fr.name] {
			out = append(out, block(fr)...)
		}
	}
	return out
}

// takeFrom is the query `NAME: {from: FRAGMENT}` stands for: fragment FRAGMENT's query NAME (a
// fragment the playbook does not use whole: a library of queries several playbooks read, each
// in its own order). Anything else written beside from is an error: the definition is the
// fragment's.
func takeFrom(el *errList, section string, nq namedQuery, used []*fragment, lib fragments, of func(*File) orderedQueries) (namedQuery, bool) {
	path := section + "." + nq.Name + ".from"
	fr, ok := lib[nq.Query.From]
	switch {
	case !ok:
		el.add(path, "line %d: unknown fragment %q (known: %s)", nq.Line, nq.Query.From, strings.Join(lib.names(), ", "))
		return nq, false
	case slices.ContainsFunc(used, func(u *fragment) bool { return u.name == fr.name }):
		el.add(path, "line %d: this playbook uses fragment %s whole: its queries are here already (place them with %s%s:)", nq.Line, fr.name, spreadPrefix, fr.name)
		return nq, false
	case !reflect.DeepEqual(nq.Query, QueryFile{From: nq.Query.From}):
		el.add(section+"."+nq.Name, "line %d: a query taken from a fragment is the fragment's: write only from", nq.Line)
		return nq, false
	}
	i := slices.IndexFunc(of(fr.file), func(q namedQuery) bool { return q.Name == nq.Name })
	if i < 0 {
		el.add(path, "line %d: fragment %s has no %s %q", nq.Line, fr.name, kindOf(section), nq.Name)
		return nq, false
	}
	return of(fr.file)[i], true
}

// mergeTemplates is every named template (or named condition: section) of the playbook and its
// fragments; a name defined twice is an error, except that a fragment may leave a name for the
// playbook to define (a fragment's rules may call a template or read a condition that each
// playbook words its own way). A fragment's own is not overridden: give new wording a name.
func mergeTemplates(el *errList, section string, own orderedTemplates, used []*fragment, of func(*File) orderedTemplates) orderedTemplates {
	owner := owners(el, kindOf(section), used, func(g *File) []namedTemplate { return of(g) }, func(t namedTemplate) (string, int) { return t.Name, t.Line })
	var out orderedTemplates
	for _, t := range own {
		if o, ok := owner[t.Name]; ok {
			el.add(section+"."+t.Name, "line %d: also defined by fragment %s (%s)", t.Line, o.frag.name, where(o.frag.source, o.line))
			continue
		}
		out = append(out, t)
	}
	for _, fr := range used {
		for _, t := range of(fr.file) {
			if owner[t.Name].frag == fr {
				out = append(out, t)
			}
		}
	}
	return out
}

// mergeFleet merges the fleet sections: the settings the playbook sets, else a fragment's (two
// fragments may not both set one), and the queries as mergeQueries does.
func mergeFleet(el *errList, own *FleetFile, used []*fragment, lib fragments) *FleetFile {
	var theirs []*fragment
	for _, fr := range used {
		if fr.file.Fleet != nil {
			theirs = append(theirs, fr)
		}
	}
	if len(theirs) == 0 {
		if own == nil {
			return nil
		}
		out := *own
		out.Queries = mergeQueries(el, "fleet.queries", own.Queries, used, lib, func(g *File) orderedQueries {
			if g.Fleet == nil {
				return nil
			}
			return g.Fleet.Queries
		})
		return &out
	}
	out := &FleetFile{}
	if own != nil {
		*out = *own
	}
	setting := func(key string, isSet func(*FleetFile) bool, take func(from *FleetFile)) {
		if own != nil && isSet(own) {
			return
		}
		var from *fragment
		for _, fr := range theirs {
			if !isSet(fr.file.Fleet) {
				continue
			}
			if from != nil {
				el.add("fleet."+key, "fragments %s and %s both set it: set it here", from.name, fr.name)
				continue
			}
			from = fr
			take(fr.file.Fleet)
		}
	}
	setting("by", func(f *FleetFile) bool { return f.By != "" }, func(f *FleetFile) { out.By = f.By })
	setting("focus", func(f *FleetFile) bool { return len(f.Focus) > 0 }, func(f *FleetFile) { out.Focus = f.Focus })
	setting("affected", func(f *FleetFile) bool { return f.Affected != "" }, func(f *FleetFile) { out.Affected = f.Affected })
	setting("columns", func(f *FleetFile) bool { return len(f.Columns) > 0 }, func(f *FleetFile) { out.Columns = f.Columns })
	var ownQueries orderedQueries
	if own != nil {
		ownQueries = own.Queries
	}
	out.Queries = mergeQueries(el, "fleet.queries", ownQueries, used, lib, func(g *File) orderedQueries {
		if g.Fleet == nil {
			return nil
		}
		return g.Fleet.Queries
	})
	return out
}

// mergeVerdicts: each fragment's rules where a spread places them, else ahead of the playbook's
// own in the order of uses; a rule with override in the place of the rule it replaces.
func mergeVerdicts(el *errList, own verdictList, used []*fragment) verdictList {
	type ruleOwner struct {
		frag *fragment
		line int
	}
	owner := map[string]ruleOwner{}
	for _, fr := range used {
		for _, v := range fr.file.Verdicts {
			if v.Name == "" {
				continue
			}
			if prev, ok := owner[v.Name]; ok {
				el.add("uses", "fragments %s and %s both name a rule %q (%s, %s)", prev.frag.name, fr.name, v.Name,
					where(prev.frag.source, prev.line), where(fr.source, v.Line))
				continue
			}
			owner[v.Name] = ruleOwner{fr, v.Line}
		}
	}
	replaced := map[string]verdictEntry{}
	placed := map[string]bool{}
	ownNames := map[string]int{}
	for i, v := range own {
		path := fmt.Sprintf("verdicts[%d]", i)
		switch {
		case v.Spread != "":
			if !slices.ContainsFunc(used, func(u *fragment) bool { return u.name == v.Spread }) {
				el.add(path, "line %d: %s%s: this playbook does not use fragment %q", v.Line, spreadPrefix, v.Spread, v.Spread)
			} else if placed[v.Spread] {
				el.add(path, "line %d: fragment %s's verdicts placed twice", v.Line, v.Spread)
			}
			placed[v.Spread] = true
		case v.Override != "":
			o, ok := owner[v.Name]
			switch {
			case v.Name == "":
				el.add(path+".override", "line %d: name the rule of fragment %s this one replaces (name: ...)", v.Line, v.Override)
			case !slices.ContainsFunc(used, func(u *fragment) bool { return u.name == v.Override }):
				el.add(path+".override", "line %d: this playbook does not use fragment %q", v.Line, v.Override)
			case !ok || o.frag.name != v.Override:
				el.add(path+".override", "line %d: fragment %s has no rule named %q to override", v.Line, v.Override, v.Name)
			default:
				replaced[v.Name] = v
			}
		case v.Name != "":
			if o, ok := owner[v.Name]; ok {
				el.add(path+".name", "line %d: fragment %s has a rule named %q too (%s): to replace it, write override: %s",
					v.Line, o.frag.name, v.Name, where(o.frag.source, o.line), o.frag.name)
			} else if first, ok := ownNames[v.Name]; ok {
				el.add(path+".name", "line %d: %q names another rule too (line %d)", v.Line, v.Name, first)
			}
			ownNames[v.Name] = v.Line
		}
	}
	rules := func(fr *fragment) verdictList {
		var out verdictList
		for i, v := range fr.file.Verdicts {
			v.Index = i
			if r, ok := replaced[v.Name]; ok && v.Name != "" {
				v = r
			}
			out = append(out, v)
		}
		return out
	}
	var out verdictList
	for _, fr := range used {
		if !placed[fr.name] {
			out = append(out, rules(fr)...)
		}
	}
	for _, v := range own {
		switch {
		case v.Spread != "":
			if i := slices.IndexFunc(used, func(u *fragment) bool { return u.name == v.Spread }); i >= 0 {
				out = append(out, rules(used[i])...)
			}
		case v.Override != "":
		default:
			out = append(out, v)
		}
	}
	return out
}
