// Package vllmnames adapts PromQL written for vLLM's own metric names to where a fleet's
// Prometheus really has them: under another prefix (KServe and OpenShift AI rename every vllm:*
// metric to kserve_vllm:* in their PodMonitor), and beside the production-stack router, which
// exports its own vllm:num_requests_running/_waiting with a `server` label into the same
// Prometheus.
//
// The rewrite goes through the PromQL parser: every vector selector (bare or under a range) whose
// metric name starts with "vllm:" gets the configured prefix and a matcher that excludes router
// series (server=""); a selector of the router's own series (server!="") is left as written.
// The edit is made in place in the query's text, at the positions the parser reports, so the
// rest of the query (its layout, comments-free formatting, other selectors, placeholders
// elsewhere in a template) stays byte for byte what its author wrote.
package vllmnames

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vllm-responder/vllm-responder/internal/configerr"

	"github.com/prometheus/prometheus/model/labels"
	promparser "github.com/prometheus/prometheus/promql/parser"
)

// Canonical is the prefix queries are written with: vLLM's own.
const Canonical = "vllm:"

// Defaults.
const (
	DefaultPrefix      = Canonical
	DefaultRouterLabel = "server"
	DefaultPodLabel    = "pod"
	// DefaultRoleLabel is KServe's label naming a pod's role (prefill, decode) in disaggregated
	// serving (LLMInferenceService).
	DefaultRoleLabel = "llm_isvc_role"
	// FallbackPodLabel names the scrape target where series carry no pod label (static scrape
	// configs, like vLLM's own example, have only job and instance).
	FallbackPodLabel = "instance"
)

var (
	prefixRE    = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*:$`)
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// Naming says how vLLM's series are named and labelled in the Prometheus the responder queries
// (the config's vllm section): one value for every part that writes or reads vLLM's series.
type Naming struct {
	// Prefix replaces "vllm:" in every metric name ("kserve_vllm:" on KServe / OpenShift AI).
	Prefix string
	// RouterLabel is the label only router series carry (the production-stack router's
	// `server`): selectors of vLLM metrics get RouterLabel="" so a router is never taken for an
	// engine. Empty disables the exclusion.
	RouterLabel string
	// PodLabel is the series label that names a pod (empty: pod); where a series or an alert
	// has none, FallbackPodLabel stands in.
	PodLabel string
	// RoleLabel is the series label that names a pod's role in disaggregated prefill/decode
	// serving (KServe's llm_isvc_role; llm-d's pods carry llm-d.ai/role, which a scrape maps to
	// a label of its choosing): the sibling comparison splits into prefill and decode pools.
	// Empty: no pools.
	RoleLabel string
}

// Default is vLLM's own names with the production-stack router excluded, pods by their pod
// label and their roles by KServe's.
func Default() Naming {
	return Naming{Prefix: DefaultPrefix, RouterLabel: DefaultRouterLabel, PodLabel: DefaultPodLabel, RoleLabel: DefaultRoleLabel}
}

// Pod is the series label that names a pod: PodLabel, or pod when it is empty.
func (n Naming) Pod() string {
	if n.PodLabel == "" {
		return DefaultPodLabel
	}
	return n.PodLabel
}

// Validate checks the prefix and the labels; each error names its key (metric_prefix,
// router_label, pod_label) as configerr says, and the caller places them under their section.
// An empty pod label is valid here (it means pod); the config requires one.
func (n Naming) Validate() error {
	var errs []error
	if !prefixRE.MatchString(n.Prefix) {
		errs = append(errs, configerr.New("metric_prefix", "%q must be a metric name prefix ending in a colon, like vllm: or kserve_vllm:", n.Prefix))
	}
	if n.RouterLabel != "" && !labelNameRE.MatchString(n.RouterLabel) {
		errs = append(errs, configerr.New("router_label", "%q is not a valid label name", n.RouterLabel))
	}
	if n.PodLabel != "" && !labelNameRE.MatchString(n.PodLabel) {
		errs = append(errs, configerr.New("pod_label", "%q is not a valid label name", n.PodLabel))
	}
	if n.RoleLabel != "" && !labelNameRE.MatchString(n.RoleLabel) {
		errs = append(errs, configerr.New("role_label", "%q is not a valid label name (empty turns the prefill/decode pools off)", n.RoleLabel))
	}
	return errors.Join(errs...)
}

// Identity reports whether the rewrite changes nothing.
func (n Naming) Identity() bool {
	return (n.Prefix == "" || n.Prefix == Canonical) && n.RouterLabel == ""
}

// Metric returns vLLM's metric name (written with or without "vllm:") under this naming.
func (n Naming) Metric(name string) string {
	return n.prefix() + strings.TrimPrefix(name, Canonical)
}

func (n Naming) prefix() string {
	if n.Prefix == "" {
		return Canonical
	}
	return n.Prefix
}

// Selector returns the selector of vLLM metric name with the given matcher text inside the
// braces (already-quoted PromQL, may be empty), router series excluded.
func (n Naming) Selector(name, matchers string) string {
	parts := []string{}
	if n.RouterLabel != "" {
		parts = append(parts, n.RouterLabel+`=""`)
	}
	if matchers != "" {
		parts = append(parts, matchers)
	}
	return n.Metric(name) + "{" + strings.Join(parts, ",") + "}"
}

var parser = promparser.NewParser(promparser.Options{})

// Rewrite returns expr with every vLLM selector renamed and router series excluded.
func (n Naming) Rewrite(expr string) (string, error) { return n.RewriteTemplate(expr, expr) }

// RewriteTemplate rewrites a query template. sample is the template with every placeholder
// replaced by text of the same length that parses ($scope by a matcher such as _s="1", $window
// by a duration such as 999999s): the parser's positions in sample are then positions in tmpl,
// and the edits, which never touch a placeholder, are made in tmpl.
func (n Naming) RewriteTemplate(tmpl, sample string) (string, error) {
	if len(tmpl) != len(sample) {
		return "", errors.New("vllmnames: sample and template differ in length")
	}
	if n.Identity() {
		return tmpl, nil
	}
	e, err := parser.ParseExpr(sample)
	if err != nil {
		return "", err
	}
	type edit struct {
		pos       int
		drop      int
		insert    string
		rewritten bool
	}
	var edits []edit
	var firstErr error
	promparser.Inspect(e, func(node promparser.Node, _ []promparser.Node) error {
		vs, ok := node.(*promparser.VectorSelector)
		if !ok || firstErr != nil {
			return nil
		}
		start := int(vs.PosRange.Start)
		text := sample[start:]
		isVLLM := strings.HasPrefix(vs.Name, Canonical)
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && strings.HasPrefix(m.Value, Canonical) {
				isVLLM = true
			}
		}
		if !isVLLM || n.routerSelector(vs) {
			return nil
		}
		// Where the braces open: after the name as written, or at the start.
		brace := -1
		nameEnd := 0
		if vs.Name != "" && strings.HasPrefix(text, vs.Name) {
			nameEnd = len(vs.Name)
			rest := strings.TrimLeft(text[nameEnd:], " \t\n\r")
			if strings.HasPrefix(rest, "{") {
				brace = nameEnd + (len(text[nameEnd:]) - len(rest))
			}
		} else if strings.HasPrefix(text, "{") {
			brace = 0
		} else {
			firstErr = fmt.Errorf("cannot locate the selector %s in the query", vs.String())
			return nil
		}
		if nameEnd > 0 && strings.HasPrefix(vs.Name, Canonical) && n.prefix() != Canonical {
			edits = append(edits, edit{pos: start, drop: len(Canonical), insert: n.prefix()})
		}
		// __name__ matchers inside the braces: rename the start of their value.
		for _, m := range vs.LabelMatchers {
			if m.Name != labels.MetricName || !strings.HasPrefix(m.Value, Canonical) || n.prefix() == Canonical || brace < 0 {
				continue
			}
			if nameEnd > 0 && m.Type == labels.MatchEqual && m.Value == vs.Name {
				continue // the name written before the braces, renamed above
			}
			q := strconv.Quote(m.Value)
			end := strings.IndexByte(text[brace:], '}')
			i := -1
			if end > 0 {
				i = strings.Index(text[brace:brace+end], q)
			}
			if i < 0 {
				firstErr = fmt.Errorf("cannot rename %s: write the metric name before the braces (vllm:x{...}) or as a double-quoted __name__ value", vs.String())
				return nil
			}
			edits = append(edits, edit{pos: start + brace + i + 1, drop: len(Canonical), insert: n.prefix()})
		}
		if n.RouterLabel != "" && !hasMatcher(vs, n.RouterLabel) {
			if brace >= 0 {
				edits = append(edits, edit{pos: start + brace + 1, insert: n.RouterLabel + `="",`})
			} else {
				edits = append(edits, edit{pos: start + nameEnd, insert: "{" + n.RouterLabel + `=""}`})
			}
		}
		return nil
	})
	if firstErr != nil {
		return "", firstErr
	}
	// Apply from the end, so earlier positions stay valid; a rename and an insertion never overlap.
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].pos > edits[j].pos })
	out := tmpl
	for _, ed := range edits {
		out = out[:ed.pos] + ed.insert + out[ed.pos+ed.drop:]
	}
	return out, nil
}

// routerSelector reports whether vs selects the production-stack router's own series: a matcher
// on the router label that the empty value does not satisfy (server!="", server="http://..."). The
// router writes its names itself (KServe's renaming is of the model pods' scrape), so such a
// selector is neither renamed nor given the exclusion.
func (n Naming) routerSelector(vs *promparser.VectorSelector) bool {
	for _, m := range vs.LabelMatchers {
		if (m.Name == n.RouterLabel || m.Name == DefaultRouterLabel) && !m.Matches("") {
			return true
		}
	}
	return false
}

func hasMatcher(vs *promparser.VectorSelector, name string) bool {
	for _, m := range vs.LabelMatchers {
		if m.Name == name {
			return true
		}
	}
	return false
}
