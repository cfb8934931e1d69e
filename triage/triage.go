// Package triage is on-demand triage, the one home of what `responder triage`, the MCP triage
// tool and the `/vllm triage` slash command share: which playbook runs (the alert's, or the
// on-demand triage), the scope when the request names no model, the deadline, the `--at` time,
// the errors a user reads and the JSON of `responder triage --output json`. Each surface reads
// its own arguments into a Request and calls Run.
package triage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Deadline bounds one triage unless the request sets its own: under the 30 s write timeout of
// `responder serve`, so that an MCP call over /mcp is answered with its diagnosis or its error.
const Deadline = 25 * time.Second

// Options are what a Service runs on. Set, Engine and Querier are required.
type Options struct {
	Set    *playbooks.Set
	Engine *evidence.Engine
	// Querier reaches the engine's Prometheus, to list the models of a scope that names none.
	Querier evidence.Querier
	// Naming is how vLLM's series are named and labelled (vllm.metric_prefix, router_label,
	// pod_label).
	Naming vllmnames.Naming
	// PrometheusURL names the server in the "unreachable" error (credentials redacted).
	PrometheusURL string
	// Timeout bounds one triage (default Deadline).
	Timeout time.Duration
	// Namespaces, when set (triage.namespaces), are the only namespaces a triage reads: a request
	// naming another is refused, and one naming none is scoped to the models of these only.
	// Empty: whoever can triage can triage any namespace.
	Namespaces []string
	// Incidents finds the open incident of the scope a triage diagnosed (nil: none is looked
	// for; incidents are off, or nothing shares their store).
	Incidents IncidentFinder
}

// IncidentFinder finds the open incident of a scope (notify/incident's Finder).
type IncidentFinder interface {
	Open(ctx context.Context, scope map[string]string) (*notify.Incident, error)
}

// Service runs on-demand triage.
type Service struct{ o Options }

// New returns the service.
func New(o Options) (*Service, error) {
	if o.Set == nil || o.Engine == nil || o.Querier == nil {
		return nil, errors.New("triage: playbooks, engine and querier are required")
	}
	o.Timeout = cmp.Or(o.Timeout, Deadline)
	return &Service{o: o}, nil
}

// Request is one triage. Labels stand for an alert's labels (model_name, pod, namespace, ...);
// an alertname among them, or Alert, runs the playbook that matches the alert, none the
// on-demand triage.
type Request struct {
	Alert  string
	Labels map[string]string
	// At evaluates every query then (zero: now); see ParseAt.
	At time.Time
	// Timeout bounds this triage (zero: the service's).
	Timeout time.Duration
}

// Result is a diagnosis and, when the request named no model, the models found in its scope.
// Its JSON is the contract of `responder triage --output json` (README, "Command line").
type Result struct {
	*playbooks.Diagnosis
	// Models are the models of the scope when the request named none and there were several,
	// each with its own verdict, the one the diagnosis is about first (Diagnosed).
	Models []Model `json:"models,omitempty"`
	// Incident is the open incident of the diagnosed scope, if any: the alerts of its model
	// that fire now (or resolved within incidents.quiet_time), joined.
	Incident *notify.Incident `json:"incident,omitempty"`
}

// Model is one model of a scope and the verdict of its own triage.
type Model struct {
	Name      string `json:"model_name"`
	Namespace string `json:"namespace,omitempty"`
	Verdict   string `json:"verdict"`
	Title     string `json:"title"`
	Diagnosed bool   `json:"diagnosed,omitempty"`
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Run runs the request. It returns a diagnosis whatever the verdict; its error, one line worded
// for the user, says why none could be made: an unknown alert, a bad label name, a label value
// longer than promql.MaxLabelValue, Prometheus unreachable, too many models to choose from.
func (s *Service) Run(ctx context.Context, r Request) (*Result, error) {
	labels := make(map[string]string, len(r.Labels)+1)
	for k, v := range r.Labels {
		if !labelNameRE.MatchString(k) {
			return nil, fmt.Errorf("label %q: not a label name ([a-zA-Z_][a-zA-Z0-9_]*)", k)
		}
		labels[k] = v
	}
	if r.Alert != "" {
		labels["alertname"] = r.Alert
	}
	// Every value is bounded before anything runs: it would be in every query of the triage.
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := promql.CheckLabelValue(k, labels[k]); err != nil {
			return nil, err
		}
	}
	if ns := labels[namespaceLabel]; ns != "" && len(s.o.Namespaces) > 0 && !slices.Contains(s.o.Namespaces, ns) {
		return nil, fmt.Errorf("namespace %q: triage reads only %s (triage.namespaces)", ns, strings.Join(s.o.Namespaces, ", "))
	}
	p := s.o.Set.Triage()
	if name := labels["alertname"]; name != "" {
		var ok bool
		if p, ok = s.o.Set.Match(labels); !ok {
			return nil, fmt.Errorf("no playbook matches alert %q (known: %s)", name, strings.Join(s.o.Set.AlertNames(), ", "))
		}
	}
	if p == nil {
		return nil, errors.New("no on-demand triage playbook is loaded (playbooks.triage)")
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(r.Timeout, s.o.Timeout))
	defer cancel()
	res, err := s.run(ctx, p, labels, r.At)
	var unavailable *evidence.UnavailableError
	if errors.As(err, &unavailable) {
		return nil, fmt.Errorf("Prometheus at %s unreachable: %s", secret.URL(s.o.PrometheusURL), unavailable.Reason)
	}
	if err != nil {
		return nil, errors.New(OneLine(err))
	}
	res.Incident = s.openIncident(ctx, labels, res.Diagnosis)
	return res, nil
}

// incidentLookupTimeout bounds the look-up of the open incident: a store that cannot be reached
// must not hold up the diagnosis.
const incidentLookupTimeout = 2 * time.Second

// openIncident is the open incident of what d diagnosed (its scope, and the request's labels it
// left out), nil when there is none or it could not be looked up: a triage is answered with
// its diagnosis whatever the store says.
func (s *Service) openIncident(ctx context.Context, labels map[string]string, d *playbooks.Diagnosis) *notify.Incident {
	if s.o.Incidents == nil || d == nil {
		return nil
	}
	scope := maps.Clone(labels)
	maps.Copy(scope, d.Scope)
	ctx, cancel := context.WithTimeout(ctx, incidentLookupTimeout)
	defer cancel()
	inc, err := s.o.Incidents.Open(ctx, scope)
	if err != nil {
		return nil
	}
	return inc
}

// Triage runs the request of labels now, as Run does (the Slack app's Triager).
func (s *Service) Triage(ctx context.Context, labels map[string]string) (*Result, error) {
	return s.Run(ctx, Request{Labels: labels})
}

// run runs p on labels, scoped to one model when they name none (scope.go).
func (s *Service) run(ctx context.Context, p *playbooks.Playbook, labels map[string]string, at time.Time) (*Result, error) {
	by, err := s.scopeLabels(p, labels)
	if err != nil {
		return nil, err
	}
	if len(by) == 0 {
		d, err := s.o.Engine.RunAt(ctx, p, labels, at)
		return &Result{Diagnosis: d}, err
	}
	models, err := s.models(ctx, p, labels, by, at)
	if err != nil {
		return nil, err
	}
	if len(s.o.Namespaces) > 0 && labels[namespaceLabel] == "" {
		models = slices.DeleteFunc(models, func(c candidate) bool { return !slices.Contains(s.o.Namespaces, c.labels[namespaceLabel]) })
		if len(models) == 0 {
			return nil, fmt.Errorf("no vLLM series of this scope in the namespaces triage reads (triage.namespaces: %s)", strings.Join(s.o.Namespaces, ", "))
		}
	}
	return s.runModels(ctx, p, labels, models, at)
}

// maxAtSkew is how far in the future an `at` time may be (clock skew between this host and
// Prometheus).
const maxAtSkew = time.Minute

// ParseAt reads an `at` time: RFC 3339 (2026-05-27T10:30:00Z, offsets and fractions allowed) or
// Unix seconds (1780000000, fractions allowed). A time in the future is an error. The caller
// names its argument (--at, at) before the error.
func ParseAt(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
			return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2006-01-02T15:04:05Z) nor Unix seconds", s)
		}
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	}
	if t.After(now.Add(maxAtSkew)) {
		return time.Time{}, fmt.Errorf("%s is in the future (now %s)", t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// OneLine is an error as a user reads it on one line (a CLI's stderr, a tool error, a Slack
// message): each of the errors it joins (errors.Join, such as a config's) by its first line,
// joined with "; ". What follows a first line (a stack, a library's detail) is dropped.
func OneLine(err error) string {
	list := configerr.List(err)
	parts := make([]string, 0, len(list))
	for _, e := range list {
		line, _, _ := strings.Cut(e.Error(), "\n")
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

// Encode is d as `responder triage --output json` prints it, for whatever carries a diagnosis in
// that contract (the signed outbound webhook). It may set d's empty lists.
func Encode(d *playbooks.Diagnosis) ([]byte, error) { return (&Result{Diagnosis: d}).JSON() }

// JSON is the result as `responder triage --output json` prints it (and the MCP triage tool
// answers): one indented object whose actions and evidence are lists, never null.
func (r *Result) JSON() ([]byte, error) {
	if r.Actions == nil {
		r.Actions = []string{}
	}
	if r.Evidence == nil {
		r.Evidence = []playbooks.Evidence{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
