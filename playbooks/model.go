package playbooks

import (
	"fmt"
	"regexp"
	"text/template"
	"time"

	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/facts"
)

// File is a playbook or a fragment as written in YAML. compile turns a playbook into a
// Playbook, with the fragments it uses merged in (fragment.go).
type File struct {
	Name string `yaml:"name"`
	// Fragment names a fragment file (a part that playbooks take with uses:): it has params,
	// queries, templates, conditions, a fleet, verdicts and the scope they read, and no name,
	// match, window or charts.
	Fragment    string `yaml:"fragment"`
	Description string `yaml:"description"`
	// Uses names the fragments this playbook takes, in order: their params, queries, fleet
	// queries, templates and conditions are merged by name, their verdicts spliced ahead of the
	// playbook's own (or where the verdicts say `- ...NAME`).
	Uses  []string          `yaml:"uses"`
	Match map[string]string `yaml:"match"`
	// OnDemand marks the playbook run by `/vllm triage` and `responder triage` without --alert.
	OnDemand bool           `yaml:"on_demand"`
	Scope    []string       `yaml:"scope"`
	Window   string         `yaml:"window"`
	Params   orderedFloats  `yaml:"params"`
	Queries  orderedQueries `yaml:"queries"`
	// Templates are named templates (Go text/template bodies) that titles, summaries and
	// actions call with {{ template "name" . }}: wording said once.
	Templates orderedTemplates `yaml:"templates"`
	// Conditions are named condition snippets (Falco's macros) that a rule's when reads by name:
	// the name stands for the snippet, as if written there.
	Conditions orderedTemplates `yaml:"conditions"`
	Verdicts   verdictList      `yaml:"verdicts"`
	Charts     []ChartFile      `yaml:"charts"`
	// Labels is not a playbook key: it is decoded only to be rejected with a message that says
	// what to write instead (match, scope), where a plain unknown key would not.
	Labels yaml.Node `yaml:"labels"`
	// Fleet compares the alerting pod with its siblings (same model and namespace).
	Fleet *FleetFile `yaml:"fleet"`
}

// QueryFile is one named query. In YAML it is either a bare PromQL string or an object.
type QueryFile struct {
	Expr  string `yaml:"expr"`
	Title string `yaml:"title"`
	// Unit formats the value: s, ratio, per_second, count, tokens, x (a factor), or empty.
	Unit string `yaml:"unit"`
	// Baseline names another query whose value is shown next to this one.
	Baseline string `yaml:"baseline"`
	// BaselineOf makes this query the baseline of another: it has no expr, the compiler derives
	// it from the other's (the pod a day ago, else the model a day ago, else the recent past;
	// see baseline.go).
	BaselineOf string `yaml:"baseline_of"`
	// Hidden queries feed conditions but are not listed as evidence.
	Hidden bool `yaml:"hidden"`
	// Optional queries read series only some servers export (a feature's: speculative
	// decoding, KV transfer, LoRA): no answer means the feature is off there, so it is neither
	// listed as missing evidence nor shown; conditions still see nil.
	Optional bool `yaml:"optional"`
	// Quantile marks a histogram_quantile. When the quantile falls in the +Inf bucket, Prometheus
	// returns the highest finite bucket bound: SaturatesAt lists those bounds (vLLM changed them
	// across versions), and a value pinned at one is reported as a lower bound, not trusted.
	Quantile    bool      `yaml:"quantile"`
	SaturatesAt []float64 `yaml:"saturates_at"`
	// Override names the fragment whose query of the same name this one replaces (in its
	// place). Without it, a name a used fragment defines is an error: a fragment's query is
	// never shadowed by accident.
	Override string `yaml:"override"`
	// From takes this query's definition from a fragment's query of the same name, placed here
	// (and nothing else of that fragment): `prefill_mean: {from: series}`.
	From string `yaml:"from"`
	// Recorded is the query's cheap form over recording rules' series, sent instead of expr
	// where its present check answers with a series (recorded.go).
	Recorded *RecordedFile `yaml:"recorded"`
}

// VerdictFile is one rule of the ordered verdict list; the first whose condition holds wins.
type VerdictFile struct {
	// Name names the rule (unique in a playbook with its fragments), so that a playbook can
	// replace a fragment's rule: a rule with the same name and `override: FRAGMENT` stands in
	// its place.
	Name     string `yaml:"name"`
	Override string `yaml:"override"`
	ID       string `yaml:"id"`
	When     string `yaml:"when"`
	// Meaning says what this rule's verdict means for this playbook and what to do (quoted by
	// the MCP tool explain_verdict); the verdict id's own meaning is VerdictMeaning.
	Meaning      string   `yaml:"meaning"`
	Title        string   `yaml:"title"`
	Summary      string   `yaml:"summary"`
	Actions      []string `yaml:"actions"`
	OfferProfile bool     `yaml:"offer_profile"`
}

// ChartFile declares a chart of some of the playbook's queries over a range.
type ChartFile struct {
	Title   string   `yaml:"title"`
	Queries []string `yaml:"queries"`
	Range   string   `yaml:"range"`
}

// Playbook is a loaded, validated and compiled playbook.
type Playbook struct {
	Name        string
	Description string
	Source      string // file it came from ("builtin/ttft-p99-high.yaml" or a path)
	// Uses are the fragments it takes (uses:), in order.
	Uses       []string
	Builtin    bool
	OnDemand   bool
	Matchers   []Matcher
	Scope      []string
	Window     time.Duration
	Params     map[string]float64
	ParamOrder []string
	Queries    []*Query
	Verdicts   []*Verdict
	Charts     []Chart
	// Fleet is the sibling comparison; nil when the playbook declares none.
	Fleet *Fleet

	byName map[string]*Query
	index  map[string]int // query name -> position in Queries
	// catalog is the facts its rules may read (facts.go).
	catalog *facts.Catalog
	// templates holds the named templates every title, summary and action is parsed with;
	// templateSrc their texts by name.
	templates   *template.Template
	templateSrc map[string]string
	// conditions are the named conditions by name (their texts).
	conditions map[string]string
}

// Query is a compiled named query.
type Query struct {
	Name        string
	source      string // the fragment's file it was written in ("" the playbook's own)
	Expr        string // with $scope, $window and $param placeholders
	Title       string
	Unit        string
	Baseline    string
	BaselineOf  string // the query this one is the baseline of (its expressions derived)
	Hidden      bool
	Optional    bool
	Quantile    bool
	SaturatesAt []float64
	// Recorded is the query's form over recording rules' series (nil: none).
	Recorded *Recorded
	segs     []segment // Expr split at its placeholders
	vector   bool      // Expr is an instant vector: see Vector
	// variantOf names the baseline query a derived query stands for (the baseline's own name on
	// itself; baseline.go); siblings expands $scope without the pod (the model's pods).
	variantOf string
	siblings  bool
}

// Variant reports whether q is one of a baseline's derived queries other than its first (the
// model a day ago, the recent past): such a query is not a value of its own, conditions read
// the baseline it stands for.
func (q *Query) Variant() bool { return q.variantOf != "" && q.variantOf != q.Name }

// Vector reports whether q returns an instant vector: such a query can share a request with
// others (evidence/batch.go), a scalar cannot.
func (q *Query) Vector() bool { return q.vector }

// Verdict is a compiled verdict rule.
type Verdict struct {
	// Name is the rule's name (empty when it has none); From is the file it was written in (a
	// fragment's, for a rule the playbook takes from one).
	Name         string
	From         string
	ID           string
	When         string
	Meaning      string
	Title        *template.Template
	Summary      *template.Template
	Actions      []*template.Template
	OfferProfile bool
	program      *vm.Program
	needs        []string // query names the condition reads
	facts        []string // the sources whose facts its condition or templates read (facts.go)
}

// Chart is a compiled chart declaration.
type Chart struct {
	Title   string
	Queries []string
	Range   time.Duration
}

// MatchType is how a matcher compares a label.
type MatchType int

const (
	MatchEqual MatchType = iota
	MatchNotEqual
	MatchRegexp
	MatchNotRegexp
)

// Matcher matches one alert label. In YAML: `alertname: X` (equal), `severity: "=~warn|crit"`,
// `"!=x"`, `"!~re"`.
type Matcher struct {
	Name  string
	Type  MatchType
	Value string
	re    *regexp.Regexp
}

// matches reports whether the label set satisfies m. A missing label is the empty string, as in
// Prometheus.
func (m Matcher) matches(labels map[string]string) bool {
	v := labels[m.Name]
	switch m.Type {
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.re.MatchString(v)
	case MatchNotRegexp:
		return !m.re.MatchString(v)
	default:
		return v == m.Value
	}
}

func (m Matcher) String() string {
	op := map[MatchType]string{MatchEqual: "=", MatchNotEqual: "!=", MatchRegexp: "=~", MatchNotRegexp: "!~"}[m.Type]
	return fmt.Sprintf("%s%s%q", m.Name, op, m.Value)
}

// matches reports whether the playbook applies to an alert with these labels. An on-demand
// playbook without matchers matches nothing.
func (p *Playbook) matches(labels map[string]string) bool {
	if len(p.Matchers) == 0 {
		return false
	}
	for _, m := range p.Matchers {
		if !m.matches(labels) {
			return false
		}
	}
	return true
}

// Query returns the named query.
func (p *Playbook) Query(name string) (*Query, bool) { q, ok := p.byName[name]; return q, ok }
