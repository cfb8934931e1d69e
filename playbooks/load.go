package playbooks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"
	"github.com/prometheus/common/model"
	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/traces"
)

var (
	playbookNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	identRE        = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	labelNameRE    = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	placeholderRE  = regexp.MustCompile(`\$([a-zA-Z_][a-zA-Z0-9_]*)`)
	units          = []string{"", "s", "ratio", "per_second", "count", "tokens", "x"}
	// reserved names cannot be used for queries or params: they are placeholders or template data.
	reserved = []string{"scope", "siblings", "window", "recent", "window_seconds", "labels", "fleet", "traces", "baseline_from", "nil", "true", "false"}
)

// parser for validating expanded queries at load time.
var promQL = promparser.NewParser(promparser.Options{})

// Error is a playbook error with its place: "playbooks/x.yaml: verdicts[2].when: unknown name ...".
type Error struct {
	Source string
	Path   string
	Msg    string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Source + ": " + e.Msg
	}
	return e.Source + ": " + e.Path + ": " + e.Msg
}

// errList collects every error of one file, so an author fixes them all in one go.
type errList struct {
	source string
	// usedBy is set on the view of a fragment's entries (from): the playbook that uses it.
	usedBy string
	errs   *[]error
}

func newErrList(source string) *errList { return &errList{source: source, errs: new([]error)} }

// from is the list for an entry written in src (a fragment's file; "" the playbook's own): its
// errors name that file, and the playbook that uses it.
func (l *errList) from(src string) *errList {
	if src == "" || src == l.source {
		return l
	}
	return &errList{source: src, usedBy: l.source, errs: l.errs}
}

func (l *errList) add(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if l.usedBy != "" {
		msg += " (as used by " + l.usedBy + ")"
	}
	*l.errs = append(*l.errs, &Error{Source: l.source, Path: path, Msg: msg})
}

func (l *errList) err() error { return errors.Join(*l.errs...) }

// Parse decodes and compiles one playbook, which may use the built-in fragments. source names
// the file in errors.
func Parse(source string, data []byte, cat *facts.Catalog) (*Playbook, error) {
	lib, err := builtinFragments()
	if err != nil {
		return nil, err
	}
	f, err := decodePlaybook(source, data)
	if err != nil {
		return nil, err
	}
	if f.Fragment != "" {
		return nil, &Error{Source: source, Path: "fragment", Msg: "a fragment, not a playbook: playbooks take it with uses: [" + f.Fragment + "]"}
	}
	return compile(source, f, lib, cat)
}

// decodePlaybook decodes a playbook or fragment file strictly.
func decodePlaybook(source string, data []byte) (*File, error) {
	var f File
	if err := decodeFile(source, data, &f); err != nil {
		return nil, err
	}
	if f.Name != "" && f.Fragment != "" {
		return nil, &Error{Source: source, Path: "fragment", Msg: "a file is a playbook (name) or a fragment (fragment), not both"}
	}
	return &f, nil
}

// compile checks and compiles a decoded playbook, section by section, and reports every error
// of the file at once. The order matters: params before queries (placeholders name them),
// queries before the fleet (name clashes) and the fleet before the verdicts (which read its
// values).
func compile(source string, f *File, lib fragments, cat *facts.Catalog) (*Playbook, error) {
	el := newErrList(source)
	f = merge(el, f, lib)
	p := &Playbook{
		Name: f.Name, Description: f.Description, Source: source, OnDemand: f.OnDemand, Uses: f.Uses,
		Params: map[string]float64{}, byName: map[string]*Query{}, index: map[string]int{}, catalog: cat,
	}
	if !playbookNameRE.MatchString(f.Name) {
		el.add("name", "%q must be lower-case letters, digits and dashes", f.Name)
	}
	if !f.Labels.IsZero() {
		el.add("labels", "a playbook has no labels: to pick the alerts it diagnoses by their labels use match, "+
			"to narrow its queries by the alert's labels use scope (templates read the alert's labels as .labels)")
	}
	compileMatch(el, p, f.Match, f.OnDemand)
	compileScope(el, p, f.Scope)
	compileWindow(el, p, f.Window)
	names := map[string]string{} // name -> kind (param, query, fleet value, fact), to find collisions
	reserveFacts(p.catalog, names)
	compileParams(el, p, f.Params, names)
	compileQueries(el, p, f.Queries, names)
	if f.Fleet != nil {
		compileFleet(el, p, f.Fleet, names)
	}
	compileConditions(el, p, f.Conditions, names)
	compileNamedTemplates(el, p, f.Templates)
	compileVerdicts(el, p, f.Verdicts)
	compileCharts(el, p, f.Charts)
	if err := el.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// compileMatch parses the label matchers, in name order.
func compileMatch(el *errList, p *Playbook, match map[string]string, onDemand bool) {
	for _, k := range sortedKeys(match) {
		m, err := parseMatcher(k, match[k])
		if err != nil {
			el.add("match."+k, "%v", err)
			continue
		}
		p.Matchers = append(p.Matchers, m)
	}
	if len(p.Matchers) == 0 && !onDemand {
		el.add("match", "required unless on_demand is true (which alerts does this playbook diagnose?)")
	}
}

// compileScope checks the scope's label names.
func compileScope(el *errList, p *Playbook, scope []string) {
	for i, l := range scope {
		if !labelNameRE.MatchString(l) {
			el.add(fmt.Sprintf("scope[%d]", i), "%q is not a valid label name", l)
		}
	}
	p.Scope = scope
}

// compileWindow parses the window (default 5m).
func compileWindow(el *errList, p *Playbook, window string) {
	p.Window = 5 * time.Minute
	if window == "" {
		return
	}
	d, err := model.ParseDuration(window)
	if err != nil || d <= 0 {
		el.add("window", "%q is not a duration like 5m", window)
		return
	}
	p.Window = time.Duration(d)
}

// compileParams keeps the params in the order written and records their names.
func compileParams(el *errList, p *Playbook, params orderedFloats, names map[string]string) {
	for _, prm := range params {
		path := "params." + prm.Name
		el := el.from(prm.Source)
		if !validName(el, path, prm.Name) {
			continue
		}
		if kind := names[prm.Name]; kind == "param" {
			el.add(path, "defined twice")
			continue
		} else if kind != "" {
			el.add(path, "name already used by a %s", kind)
			continue
		}
		names[prm.Name] = "param"
		p.Params[prm.Name] = prm.Value
		p.ParamOrder = append(p.ParamOrder, prm.Name)
	}
}

// compileQueries compiles the named queries: first every name (a baseline may name a query
// written after it), then each query's baseline, placeholders and PromQL.
func compileQueries(el *errList, p *Playbook, queries orderedQueries, names map[string]string) {
	if len(queries) == 0 {
		el.add("queries", "at least one query is required")
	}
	recorded := map[*Query]*RecordedFile{}
	for _, nq := range queries {
		path := "queries." + nq.Name
		el := el.from(nq.Source)
		if !claimName(el, path, nq.Name, "query", names) {
			continue
		}
		q := &Query{Name: nq.Name, source: nq.Source, Expr: strings.TrimSpace(nq.Query.Expr), Title: nq.Query.Title,
			Unit: nq.Query.Unit, Baseline: nq.Query.Baseline, BaselineOf: nq.Query.BaselineOf, Hidden: nq.Query.Hidden, Optional: nq.Query.Optional,
			Quantile: nq.Query.Quantile, SaturatesAt: nq.Query.SaturatesAt}
		switch {
		case q.BaselineOf != "" && q.Expr != "":
			el.add(path+".expr", "a baseline_of query derives its expressions: leave expr out")
		case q.BaselineOf == "" && q.Expr == "":
			el.add(path+".expr", "empty query")
		case q.BaselineOf != "" && nq.Query.Recorded != nil:
			el.add(path+".recorded", "a baseline_of query derives its expressions: leave recorded out")
		}
		recorded[q] = nq.Query.Recorded
		unitAndTitle(el, path, q)
		if len(q.SaturatesAt) > 0 && !q.Quantile {
			el.add(path+".saturates_at", "only for quantile queries (set quantile: true)")
		}
		p.index[q.Name] = len(p.Queries)
		p.Queries = append(p.Queries, q)
		p.byName[q.Name] = q
	}
	for _, q := range p.Queries {
		path := "queries." + q.Name
		el := el.from(q.source)
		if q.Baseline != "" {
			if _, ok := p.byName[q.Baseline]; !ok {
				el.add(path+".baseline", "unknown query %q", q.Baseline)
			}
		}
		if q.Expr != "" {
			e := compileExpr(el, p, q, path, "scope", `model_name="m",pod="p"`, names)
			if e != nil {
				q.vector = e.Type() == promparser.ValueTypeVector
			}
			q.Recorded = compileRecorded(el, path, recorded[q], e, func(path, expr string) ([]segment, promparser.Expr) {
				return compilePromQL(el, p, expr, false, path, "scope", `model_name="m",pod="p"`, names)
			})
		}
	}
	compileBaselines(el, p, names)
	for _, q := range p.Queries {
		if q.variantOf == "" {
			continue
		}
		if e := compileExpr(el.from(q.source), p, q, "queries."+q.variantOf+".baseline_of", "scope", `model_name="m",pod="p"`, names); e != nil {
			q.vector = e.Type() == promparser.ValueTypeVector
		}
	}
}

// claimName records name as a kind (query, condition) in names when it is a valid name not used
// yet, and adds the error when not.
func claimName(el *errList, path, name, kind string, names map[string]string) bool {
	if !validName(el, path, name) {
		return false
	}
	if used := names[name]; used != "" {
		el.add(path, "name already used by a %s", used)
		return false
	}
	names[name] = kind
	return true
}

// validName reports whether name can name a param or a query, and adds the error when not.
func validName(el *errList, path, name string) bool {
	switch {
	case !identRE.MatchString(name):
		el.add(path, "name must be lower-case letters, digits and underscores")
	case slices.Contains(reserved, name):
		el.add(path, "%q is reserved", name)
	default:
		return true
	}
	return false
}

// unitAndTitle checks a query's unit and defaults its title to its name.
func unitAndTitle(el *errList, path string, q *Query) {
	if !slices.Contains(units, q.Unit) {
		el.add(path+".unit", "unknown unit %q (one of: %s)", q.Unit, strings.Join(units[1:], ", "))
	}
	if q.Title == "" {
		q.Title = q.Name
	}
}

// compileExpr checks that every placeholder of q's PromQL is known ($window, the params and
// $<scope>: "scope" for a query, "siblings" for a fleet query), splits the query at them, and
// parses it expanded with sampleScope. It returns the parsed sample, nil when it does not parse.
func compileExpr(el *errList, p *Playbook, q *Query, path, scope, sampleScope string, names map[string]string) promparser.Expr {
	var e promparser.Expr
	q.segs, e = compilePromQL(el, p, q.Expr, q.variantOf != "", path, scope, sampleScope, names)
	return e
}

// compilePromQL is compileExpr of one expression (recent: a baseline's, which may read
// $recent): its segments, and the parsed sample (nil when it does not parse).
func compilePromQL(el *errList, p *Playbook, expr string, recent bool, path, scope, sampleScope string, names map[string]string) ([]segment, promparser.Expr) {
	for _, m := range placeholderRE.FindAllStringSubmatch(expr, -1) {
		if m[1] == "recent" && recent {
			continue // a baseline's recent past (baseline.go)
		}
		if m[1] != scope && m[1] != "window" && names[m[1]] != "param" {
			el.add(path, "unknown placeholder $%s (known: $%s, $window and the params)", m[1], scope)
		}
	}
	segs := splitTemplate(expr, p.Params)
	e, err := promQL.ParseExpr(expand(segs, sampleScope, p.Window, p.Params))
	if err != nil {
		el.add(path, "invalid PromQL: %s", firstLine(err.Error()))
		return segs, nil
	}
	return segs, e
}

// compileVerdicts compiles each verdict's condition (over the queries, params and fleet values)
// and its templates.
func compileVerdicts(el *errList, p *Playbook, verdicts verdictList) {
	env := exprEnv(p)
	if len(verdicts) == 0 {
		el.add("verdicts", "at least one verdict is required")
	}
	for _, ve := range verdicts {
		vf := ve.VerdictFile
		path := fmt.Sprintf("verdicts[%d]", ve.Index)
		el := el.from(ve.Source)
		from := ve.Source
		if from == "" {
			from = p.Source
		}
		if ve.Name != "" && !playbookNameRE.MatchString(ve.Name) {
			el.add(path+".name", "%q must be lower-case letters, digits and dashes", ve.Name)
		}
		v := &Verdict{Name: ve.Name, From: from, ID: vf.ID, When: strings.TrimSpace(vf.When), Meaning: strings.TrimSpace(vf.Meaning), OfferProfile: vf.OfferProfile}
		if !slices.Contains(KnownVerdicts, vf.ID) {
			el.add(path+".id", "unknown verdict %q (one of: %s)", vf.ID, strings.Join(KnownVerdicts, ", "))
		}
		compileCondition(el, p, v, path, env)
		var err error
		if v.Title, err = compileTemplate(vf.Title, p); err != nil {
			el.add(path+".title", "%v", err)
		}
		if vf.Title == "" {
			el.add(path+".title", "required (the one line a person reads first)")
		}
		if v.Summary, err = compileTemplate(vf.Summary, p); err != nil {
			el.add(path+".summary", "%v", err)
		}
		for j, a := range vf.Actions {
			t, err := compileTemplate(a, p)
			if err != nil {
				el.add(fmt.Sprintf("%s.actions[%d]", path, j), "%v", err)
			}
			v.Actions = append(v.Actions, t)
		}
		// its named conditions and the named templates it calls read facts too
		withCalled := vf
		withCalled.When = v.When
		withCalled.Actions = append(slices.Clone(vf.Actions), p.templateTexts(vf)...)
		v.facts = readsFacts(p.catalog, withCalled)
		p.Verdicts = append(p.Verdicts, v)
	}
}

// compileCondition compiles v.When to a boolean expr program and notes the values it reads.
func compileCondition(el *errList, p *Playbook, v *Verdict, path string, env map[string]any) {
	if v.When == "" {
		el.add(path+".when", "a condition is required (use \"true\" for a catch-all)")
		return
	}
	full, err := p.expandConditions(v.When)
	if err != nil {
		el.add(path+".when", "%v", err)
		return
	}
	v.When = full
	prog, err := expr.Compile(v.When, expr.Env(env), expr.AsBool())
	if err != nil {
		el.add(path+".when", "%s", exprError(err))
		return
	}
	v.program = prog
	v.needs = identifiers(v.When, p)
}

// compileCharts checks each chart's range (default 1h) and queries.
func compileCharts(el *errList, p *Playbook, charts []ChartFile) {
	for i, cf := range charts {
		path := fmt.Sprintf("charts[%d]", i)
		c := Chart{Title: cf.Title, Queries: cf.Queries, Range: time.Hour}
		if cf.Range != "" {
			d, err := model.ParseDuration(cf.Range)
			if err != nil || d <= 0 {
				el.add(path+".range", "%q is not a duration like 1h", cf.Range)
			} else {
				c.Range = time.Duration(d)
			}
		}
		if len(cf.Queries) == 0 {
			el.add(path+".queries", "at least one query is required")
		}
		for j, qn := range cf.Queries {
			if _, ok := p.byName[qn]; !ok {
				el.add(fmt.Sprintf("%s.queries[%d]", path, j), "unknown query %q", qn)
			}
		}
		p.Charts = append(p.Charts, c)
	}
}

func parseMatcher(name, v string) (Matcher, error) {
	if !labelNameRE.MatchString(name) {
		return Matcher{}, fmt.Errorf("%q is not a valid label name", name)
	}
	m := Matcher{Name: name, Type: MatchEqual, Value: v}
	switch {
	case strings.HasPrefix(v, "=~"):
		m.Type, m.Value = MatchRegexp, v[2:]
	case strings.HasPrefix(v, "!~"):
		m.Type, m.Value = MatchNotRegexp, v[2:]
	case strings.HasPrefix(v, "!="):
		m.Type, m.Value = MatchNotEqual, v[2:]
	case strings.HasPrefix(v, "="):
		m.Value = v[1:]
	}
	if m.Type == MatchRegexp || m.Type == MatchNotRegexp {
		re, err := regexp.Compile("^(?:" + m.Value + ")$") // anchored, as in Prometheus
		if err != nil {
			return Matcher{}, fmt.Errorf("invalid regexp: %v", err)
		}
		m.re = re
	}
	return m, nil
}

// exprEnv declares every name a condition may use: queries and params are numbers. At run time
// a missing query value is nil instead, so `x > 1` fails (the condition is false) while `x == nil`
// and `x ?? 0` work.
func exprEnv(p *Playbook) map[string]any {
	names := fleetNames(p)
	env := make(map[string]any, 1+len(p.Queries)+len(p.Params)+len(names))
	env["window_seconds"] = p.Window.Seconds()
	for _, q := range p.Queries {
		if !q.Variant() {
			env[q.Name] = 0.0
		}
	}
	for k, v := range p.Params {
		env[k] = v
	}
	for _, n := range names {
		env[n] = 0.0
	}
	factEnv(env, p.catalog, p.catalog.Known(), false)
	return env
}

// identifiers returns the query names (and fleet values) a condition reads.
func identifiers(src string, p *Playbook) []string {
	known := map[string]bool{}
	for n := range p.byName {
		known[n] = true
	}
	for _, n := range fleetNames(p) {
		known[n] = true
	}
	tree, err := exprparser.Parse(src)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	ast.Find(tree.Node, func(n ast.Node) bool {
		if id, ok := n.(*ast.IdentifierNode); ok {
			if known[id.Value] && !seen[id.Value] {
				seen[id.Value] = true
				out = append(out, id.Value)
			}
		}
		return false
	})
	return out
}

var exprUnknownRE = regexp.MustCompile(`unknown name (\S+)`)

// exprError keeps expr's first line ("unknown name queue_meen (1:1)") and quotes the name.
func exprError(err error) string {
	msg := firstLine(err.Error())
	msg = exprUnknownRE.ReplaceAllString(msg, `unknown name "$1"`)
	return msg
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// sampleTraces is the trace report templates are tried with at load time.
var sampleTraces = &traces.Report{Service: "vllm-m", Summary: "The slowest request (2.0s) spent 50% of its time queued.",
	Requests: []traces.Request{{TraceID: "1", Duration: 2 * time.Second, Queue: time.Second, Prefill: time.Second / 2, Decode: time.Second / 2}}}

// compileNamedTemplates parses the named templates (the playbook's and its fragments') into the
// set every title, summary and action is parsed with, so that {{ template "name" . }} calls one.
func compileNamedTemplates(el *errList, p *Playbook, named orderedTemplates) {
	p.templates = template.New("").Option("missingkey=error").Funcs(templateFuncs)
	p.templateSrc = map[string]string{}
	for _, nt := range named {
		el := el.from(nt.Source)
		path := "templates." + nt.Name
		if !identRE.MatchString(nt.Name) {
			el.add(path, "name must be lower-case letters, digits and underscores")
			continue
		}
		if _, dup := p.templateSrc[nt.Name]; dup {
			el.add(path, "defined twice")
			continue
		}
		if _, err := p.templates.New(nt.Name).Parse(nt.Text); err != nil {
			el.add(path, "%s", strings.TrimPrefix(err.Error(), "template: "+nt.Name+":"))
			continue
		}
		p.templateSrc[nt.Name] = nt.Text
	}
}

var templateCallRE = regexp.MustCompile(`\{\{-?\s*template\s+"([^"]+)"`)

// templateTexts are the named templates a rule's texts call, and those they call in turn.
func (p *Playbook) templateTexts(vf VerdictFile) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(text string)
	walk = func(text string) {
		for _, m := range templateCallRE.FindAllStringSubmatch(text, -1) {
			if src, ok := p.templateSrc[m[1]]; ok && !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, src)
				walk(src)
			}
		}
	}
	walk(strings.Join(append([]string{vf.Title, vf.Summary}, vf.Actions...), "\n"))
	return out
}

// compileTemplate parses a summary/title/action template and executes it once against sample
// data, so that an unknown name fails at load time rather than during an incident.
func compileTemplate(src string, p *Playbook) (*template.Template, error) {
	base := p.templates
	if base == nil {
		base = template.New("").Option("missingkey=error").Funcs(templateFuncs)
	}
	t, err := base.Clone()
	if err != nil {
		return nil, err
	}
	if _, err := t.Parse(src); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: :"))
	}
	sample := templateData(p, map[string]*float64{}, map[string]string{"model_name": "m", "pod": "p"}, &FleetView{Focus: "p", Pods: 1}, sampleTraces, p.catalog.Known())
	for _, q := range p.Queries {
		v := 1.0
		sample[q.Name] = &v
	}
	for _, n := range fleetNames(p) {
		v := 1.0
		sample[n] = &v
	}
	if err := t.Execute(&bytes.Buffer{}, sample); err != nil {
		return nil, errors.New(templateErr(err))
	}
	// Also with every value missing: templates must render "n/a", not fail.
	if err := t.Execute(&bytes.Buffer{}, templateData(p, map[string]*float64{}, nil, nil, nil, nil)); err != nil {
		return nil, fmt.Errorf("fails when values are missing: %s", templateErr(err))
	}
	return t, nil
}

var mapKeyRE = regexp.MustCompile(`map has no entry for key "([^"]+)"`)

func templateErr(err error) string {
	msg := err.Error()
	if m := mapKeyRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown name %q", m[1])
	}
	msg = strings.TrimPrefix(msg, "template: :")
	return msg
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodedFile is one file of a playbooks directory, decoded.
type decodedFile struct {
	source string
	file   *File
}

// decodeFS decodes every *.yaml / *.yml file under dir of fsys, in name order: playbooks and
// fragments, not fixtures (*_test.yaml) nor testdata. prefix names them in errors.
func decodeFS(fsys fs.FS, dir, prefix string) ([]decodedFile, error) {
	var out []decodedFile
	var errs []error
	err := fs.WalkDir(fsys, dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Skip hidden entries: a ConfigMap mounted as a directory holds every file twice, once
		// under Kubernetes' "..<timestamp>/" copy.
		if name := d.Name(); path != dir && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return nil
		}
		if strings.HasSuffix(path, "_test.yaml") || strings.HasSuffix(path, "_test.yml") || strings.Contains(path, "/testdata/") {
			return nil // fixtures live beside playbooks
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join(prefix, strings.TrimPrefix(path, dir+"/")))
		f, err := decodePlaybook(name, data)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out = append(out, decodedFile{name, f})
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// fragmentsOf adds the fragments among files to a copy of base: a name base or another file
// has already is an error.
func fragmentsOf(files []decodedFile, base fragments) (fragments, error) {
	lib := maps.Clone(base)
	if lib == nil {
		lib = fragments{}
	}
	var errs []error
	for _, df := range files {
		if df.file.Fragment == "" {
			continue
		}
		fr, err := parseFragment(df.source, df.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := lib[fr.name]; ok {
			errs = append(errs, &Error{Source: df.source, Path: "fragment", Msg: fmt.Sprintf("%q is already the name of %s", fr.name, prev.source)})
			continue
		}
		lib[fr.name] = fr
	}
	return lib, errors.Join(errs...)
}

// compileAll compiles the playbooks among files with the fragments of lib.
func compileAll(files []decodedFile, lib fragments, cat *facts.Catalog) ([]*Playbook, error) {
	var out []*Playbook
	var errs []error
	for _, df := range files {
		if df.file.Fragment != "" {
			continue
		}
		p, err := compile(df.source, df.file, lib, cat)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}

// loadFS loads the playbooks under dir of fsys, with the fragments there and those of base.
func loadFS(fsys fs.FS, dir, prefix string, base fragments, cat *facts.Catalog) ([]*Playbook, error) {
	files, err := decodeFS(fsys, dir, prefix)
	lib, ferr := fragmentsOf(files, base)
	pbs, cerr := compileAll(files, lib, cat)
	return pbs, errors.Join(err, ferr, cerr)
}

// LoadDir loads the user's playbooks from a directory on disk. They may use the built-in
// fragments and the fragments in the directory.
func LoadDir(dir string, cat *facts.Catalog) ([]*Playbook, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("playbooks directory: %w", err)
	}
	lib, err := builtinFragments()
	if err != nil {
		return nil, err
	}
	return loadFS(os.DirFS(dir), ".", dir, lib, cat)
}
