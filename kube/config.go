package kube

import (
	"errors"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
)

// Config is the `kubernetes:` section: how kube-state-metrics' series are found in Prometheus.
type Config struct {
	// Enabled reads kube-state-metrics for every diagnosis that names a pod (default true). Where
	// Prometheus has no series for the pod, the diagnosis says what was missing and decides as
	// it would without them.
	Enabled bool `yaml:"enabled"`
	// Selector narrows every kube-state-metrics query to its scrape job: PromQL label matchers
	// such as job="kube-state-metrics" (default none: the metric names are kube-state-metrics'
	// own). Two kube-state-metrics scraped into one Prometheus need it.
	Selector string `yaml:"selector"`
	// NamespaceLabel and PodLabel name the labels of kube-state-metrics' series that hold the
	// namespace and name of the pod a series describes: namespace and pod when Prometheus
	// scrapes kube-state-metrics with honor_labels (kube-prometheus-stack does), otherwise the
	// scrape's own labels take those names and kube-state-metrics' become exported_namespace and
	// exported_pod. KEDA's and llm-d's autoscaler metrics are read by NamespaceLabel too.
	NamespaceLabel string `yaml:"namespace_label"`
	PodLabel       string `yaml:"pod_label"`

	selector string // Selector, parsed and written back canonically ("" or `a="b",c=~"d"`)
}

// Defaults.
const (
	DefaultNamespaceLabel = "namespace"
	DefaultPodLabel       = "pod"
)

// SetDefaults fills what the file left out.
func (c *Config) SetDefaults() {
	c.Enabled = true
	c.NamespaceLabel = DefaultNamespaceLabel
	c.PodLabel = DefaultPodLabel
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate checks the section and compiles its selector. It returns every error, each naming
// its key inside the section (configerr); the caller adds "kubernetes.".
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct{ key, v string }{{"namespace_label", c.NamespaceLabel}, {"pod_label", c.PodLabel}} {
		if !labelNameRE.MatchString(f.v) {
			errs = append(errs, configerr.New(f.key, "%q is not a valid label name", f.v))
		}
	}
	if c.NamespaceLabel == c.PodLabel && c.PodLabel != "" {
		errs = append(errs, configerr.New("pod_label", "must differ from namespace_label (%q)", c.NamespaceLabel))
	}
	sel, err := parseSelector(c.Selector)
	if err != nil {
		errs = append(errs, configerr.New("selector", "%v", err))
	}
	c.selector = sel
	return errors.Join(errs...)
}

// parseSelector reads label matchers written as inside a PromQL selector's braces
// (job="kube-state-metrics", cluster=~"eu-.*") and writes them back canonically.
func parseSelector(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if strings.HasPrefix(s, "{") {
		return "", errors.New(`write the matchers without braces, e.g. job="kube-state-metrics"`)
	}
	ms, err := promparser.NewParser(promparser.Options{}).ParseMetricSelector("{" + s + "}")
	if err != nil {
		return "", errors.New(`not PromQL label matchers like job="kube-state-metrics": ` + firstLine(err.Error()))
	}
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.Name == labels.MetricName {
			return "", errors.New("must not match the metric name: the queries name their metrics")
		}
		parts = append(parts, m.String())
	}
	return strings.Join(parts, ","), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
