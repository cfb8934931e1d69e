package gpu

import (
	"errors"
	"regexp"
	"slices"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
)

// Config is the `gpu:` section: how dcgm-exporter's series are found in Prometheus and joined to
// a vLLM pod.
type Config struct {
	// Enabled reads dcgm-exporter's series for every diagnosis that names a pod (default true).
	// Where Prometheus has none for the pod, the diagnosis says so in one note and decides as it
	// would without them.
	Enabled bool `yaml:"enabled"`
	// MetricPrefix is put before dcgm-exporter's metric names (DCGM_FI_DEV_SM_CLOCK...), for a
	// scrape config that renames them (default none).
	MetricPrefix string `yaml:"metric_prefix"`
	// PodLabel and NamespaceLabel name the labels of the GPU series that hold the pod using the
	// GPU: exported_pod and exported_namespace where the exporter is scraped with honor_labels
	// false (the dcgm-exporter chart's and the GPU Operator's ServiceMonitors), pod and namespace
	// with honor_labels true. NodeLabel names the node: Hostname up to dcgm-exporter 4.8.x,
	// hostname on its main branch. The defaults are deploy/prometheus/profiles.yaml's gpu:.
	PodLabel       string `yaml:"pod_label"`
	NamespaceLabel string `yaml:"namespace_label"`
	NodeLabel      string `yaml:"node_label"`
	// Recent is how far back a fault counts as new (an XID that appeared, remapped rows that
	// rose, NVLink errors, a GPU that stopped reporting): VLLMGPUFault's alerts.gpu_fault.recent.
	Recent time.Duration `yaml:"recent"`
	// XIDs are the XIDs of the drain-or-reset kind (alerts.gpu_fault.xids: NVSentinel's FATAL
	// ones with a reset, reboot or workflow action; docs/gpu-facts.md).
	XIDs []int `yaml:"xids"`
}

// Defaults, as deploy/prometheus/profiles.yaml has them (pinned by its test).
const (
	DefaultPodLabel       = "exported_pod"
	DefaultNamespaceLabel = "exported_namespace"
	DefaultNodeLabel      = "Hostname"
	DefaultRecent         = time.Hour
)

// DefaultXIDs are the drain/reset XIDs of docs/gpu-facts.md.
var DefaultXIDs = []int{46, 48, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 155, 156, 158, 160}

// SetDefaults fills what the file left out.
func (c *Config) SetDefaults() {
	c.Enabled = true
	c.PodLabel, c.NamespaceLabel, c.NodeLabel = DefaultPodLabel, DefaultNamespaceLabel, DefaultNodeLabel
	c.Recent = DefaultRecent
	c.XIDs = slices.Clone(DefaultXIDs)
}

var (
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// Validate checks the section. It returns every error, each naming its key inside the section
// (configerr); the caller adds "gpu.".
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct{ key, v string }{{"pod_label", c.PodLabel}, {"namespace_label", c.NamespaceLabel}, {"node_label", c.NodeLabel}} {
		if !labelNameRE.MatchString(f.v) {
			errs = append(errs, configerr.New(f.key, "%q is not a valid label name", f.v))
		}
	}
	if c.PodLabel == c.NamespaceLabel || c.PodLabel == c.NodeLabel || c.NamespaceLabel == c.NodeLabel {
		errs = append(errs, configerr.New("pod_label", "pod_label, namespace_label and node_label must differ (%q, %q, %q)", c.PodLabel, c.NamespaceLabel, c.NodeLabel))
	}
	if c.MetricPrefix != "" && !metricNameRE.MatchString(c.MetricPrefix) {
		errs = append(errs, configerr.New("metric_prefix", "%q cannot begin a metric name", c.MetricPrefix))
	}
	if c.Recent < time.Minute {
		errs = append(errs, configerr.New("recent", "must be at least 1m"))
	}
	if len(c.XIDs) == 0 {
		errs = append(errs, configerr.New("xids", "required: the XIDs that make a GPU fault"))
	}
	for _, x := range c.XIDs {
		if x <= 0 {
			errs = append(errs, configerr.New("xids", "%d is not an XID", x))
		}
	}
	return errors.Join(errs...)
}
