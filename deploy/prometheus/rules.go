// Package prometheus renders the vLLM Prometheus alert rules from one template
// (vllm-alerts.rules.yml.tmpl) and one parameter file (profiles.yaml), both embedded.
//
// The production rules and the fast variant used by demos and end-to-end tests come
// from the same template, so their expressions differ only in windows, `for:`
// durations, thresholds and severities. cmd/rulegen is the command-line front end.
package prometheus

//go:generate go run ../../cmd/rulegen -profile production -o vllm-alerts.rules.yml
//go:generate go run ../../cmd/rulegen -profile fast -o vllm-alerts.fast.rules.yml
//go:generate go run ../../cmd/rulegen -profile kserve -o vllm-alerts.kserve.rules.yml
//go:generate cp vllm-alerts.rules.yml vllm-alerts.kserve.rules.yml ../helm/vllm-responder/files/

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// The committed, rendered files. People apply these directly; a test fails when
// either is stale.
const (
	ProductionFile = "vllm-alerts.rules.yml"
	FastFile       = "vllm-alerts.fast.rules.yml"
	KServeFile     = "vllm-alerts.kserve.rules.yml"
)

// AlertNames are the built-in alerts, in the order the rules file defines them.
var AlertNames = []string{
	"VLLMTimeToFirstTokenP99High",
	"VLLMInterTokenLatencyP99High",
	"VLLMSpecDecodeAcceptanceDropped",
	"VLLMKVCacheNearFull",
	"VLLMRequestAbortRateHigh",
	"VLLMKVTransferFailing",
	"VLLMQueueDepthHigh",
	"VLLMEngineStalled",
	"VLLMGPUFault",
}

// GPUAlertName is the alert a profile with gpu.enabled false leaves out.
const GPUAlertName = "VLLMGPUFault"

var (
	//go:embed vllm-alerts.rules.yml.tmpl
	rulesTemplate string
	//go:embed profiles.yaml
	profilesYAML []byte
)

// Alert holds the parameters of one alert.
type Alert struct {
	Threshold float64 `yaml:"threshold"`
	For       string  `yaml:"for"`
	Severity  string  `yaml:"severity"`
}

// AbortAlert adds the traffic floor (requests with a first token per second) below which the
// unfinished share is ignored.
type AbortAlert struct {
	Alert          `yaml:",inline"`
	MinStartedRate float64 `yaml:"min_started_rate"`
}

// SpecDecodeAlert adds what the acceptance is compared with: Threshold is the share of its
// baseline the accepted draft tokens per decode step must have fallen to, MinBaseline the least
// baseline that counts (speculation that did little cannot fall much), TPOTRise the factor the mean
// time per output token must have risen by, and BaselineWindow the span before the rate window
// that stands in for a day-old baseline.
type SpecDecodeAlert struct {
	Alert          `yaml:",inline"`
	MinBaseline    float64 `yaml:"min_baseline"`
	TPOTRise       float64 `yaml:"tpot_rise"`
	BaselineWindow string  `yaml:"baseline_window"`
}

// StallAlert adds an idle engine's hang: IdleConnections is how many open file descriptors its
// API server must gain over the rate window (requests accepted and not answered, one each) while
// the engine held nothing, made no progress and its gauges read 0/0.
type StallAlert struct {
	Alert           `yaml:",inline"`
	IdleConnections float64 `yaml:"idle_connections"`
}

// RecordNames are the recording rules, in the order the rules file defines them: the stall
// history, and the API server's process start time with its model's labels, that the
// responder's playbooks read where they find them (the progress fragment's `recorded:` forms).
var RecordNames = []string{"engine:vllm_tokens_moved:timestamp", "engine:vllm_stall_held:1m", "target:process_start_time_seconds:vllm"}

// RecordBy is what the recording rules group by: one series per engine of a pod, with what the
// playbooks' fleet groups by (namespace, pod, instance, engine, the role) and model_name, which
// their scope selects on.
func (p Profile) RecordBy() string {
	var by []string
	for _, l := range []string{"namespace", p.PodLabel, "instance", "engine", "model_name", p.RoleLabel} {
		if l != "" && !slices.Contains(by, l) {
			by = append(by, l)
		}
	}
	return strings.Join(by, ", ")
}

// RecordTargetBy is RecordBy without the engine: one series per scrape target (a pod's API
// server) and model.
func (p Profile) RecordTargetBy() string {
	var by []string
	for _, l := range strings.Split(p.RecordBy(), ", ") {
		if l != "engine" {
			by = append(by, l)
		}
	}
	return strings.Join(by, ", ")
}

// GPUFaultAlert holds the parameters of VLLMGPUFault: the XIDs of the drain/reset kind, how
// long a new fault keeps firing (Recent), the NVLink CRC errors per second that count.
type GPUFaultAlert struct {
	XIDs          []int   `yaml:"xids"`
	Recent        string  `yaml:"recent"`
	NVLinkCRCRate float64 `yaml:"nvlink_crc_rate"`
	For           string  `yaml:"for"`
	Severity      string  `yaml:"severity"`
}

// GPULabels says how dcgm-exporter's series are labelled where they are scraped: the labels
// naming the pod that holds a GPU, its namespace, and the node. Enabled false leaves the GPU
// alert out.
type GPULabels struct {
	Enabled        bool   `yaml:"enabled"`
	PodLabel       string `yaml:"pod_label"`
	NamespaceLabel string `yaml:"namespace_label"`
	NodeLabel      string `yaml:"node_label"`
}

// Profile is the full parameter set the template is rendered with.
type Profile struct {
	Name         string `yaml:"-"`
	RunbookBase  string `yaml:"runbook_base"`
	RateWindow   string `yaml:"rate_window"`
	GaugeWindow  string `yaml:"gauge_window"`
	EvalInterval string `yaml:"eval_interval"`
	// MetricPrefix replaces vLLM's "vllm:" in every metric name (kserve_vllm: on KServe and
	// OpenShift AI); RouterLabel is the label only router series carry (excluded: server="");
	// PodLabel is the label that names a pod, which the rules group by (instance for static
	// scrape configs without pod).
	MetricPrefix string    `yaml:"metric_prefix"`
	RouterLabel  string    `yaml:"router_label"`
	PodLabel     string    `yaml:"pod_label"`
	GPU          GPULabels `yaml:"gpu"`
	// RoleLabel names a pod's role in disaggregated serving (empty: none); RecordInterval is
	// the evaluation interval of the stall history's recording rules (RecordNames).
	RoleLabel      string `yaml:"role_label"`
	RecordInterval string `yaml:"record_interval"`
	Alerts         struct {
		TTFT       Alert           `yaml:"ttft"`
		ITL        Alert           `yaml:"itl"`
		SpecDecode SpecDecodeAlert `yaml:"spec_decode"`
		KVCache    Alert           `yaml:"kv_cache"`
		Abort      AbortAlert      `yaml:"abort"`
		KVTransfer Alert           `yaml:"kv_transfer"`
		Queue      Alert           `yaml:"queue"`
		Stall      StallAlert      `yaml:"stall"`
		GPUFault   GPUFaultAlert   `yaml:"gpu_fault"`
	} `yaml:"alerts"`
}

type profilesFile struct {
	Defaults map[string]any            `yaml:"defaults"`
	Profiles map[string]map[string]any `yaml:"profiles"`
}

// ProfileNames lists the profiles defined in profiles.yaml, sorted.
func ProfileNames() ([]string, error) {
	pf, err := parseProfiles()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(pf.Profiles))
	for n := range pf.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

func parseProfiles() (*profilesFile, error) {
	var pf profilesFile
	dec := yaml.NewDecoder(bytes.NewReader(profilesYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil {
		return nil, fmt.Errorf("profiles.yaml: %w", err)
	}
	return &pf, nil
}

// LoadProfile returns the named profile: the defaults, overlaid with the profile's own
// values, overlaid with overrides ("alerts.ttft.threshold=2.5", values in YAML syntax).
// Unknown keys, in profiles.yaml or in overrides, are errors.
func LoadProfile(name string, overrides ...string) (Profile, error) {
	pf, err := parseProfiles()
	if err != nil {
		return Profile{}, err
	}
	own, ok := pf.Profiles[name]
	if !ok {
		names, _ := ProfileNames()
		return Profile{}, fmt.Errorf("profiles.yaml: unknown profile %q (have %s)", name, strings.Join(names, ", "))
	}
	merged := merge(pf.Defaults, own)
	for _, o := range overrides {
		if err := set(merged, o); err != nil {
			return Profile{}, fmt.Errorf("override %q: %w", o, err)
		}
	}
	raw, err := yaml.Marshal(merged)
	if err != nil {
		return Profile{}, err
	}
	var p Profile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("profile %q: %w", name, err)
	}
	p.Name = name
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("profile %q: %w", name, err)
	}
	return p, nil
}

// merge returns base overlaid with over, recursively for nested maps. Neither input is modified.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		if m, ok := v.(map[string]any); ok {
			v = merge(m, nil)
		}
		out[k] = v
	}
	for k, v := range over {
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			out[k] = merge(bm, om)
			continue
		}
		out[k] = v
	}
	return out
}

// set applies one "dotted.key=value" override; the key must already exist.
func set(m map[string]any, kv string) error {
	key, value, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return errors.New("want key=value, e.g. alerts.ttft.threshold=2.5")
	}
	parts := strings.Split(key, ".")
	for i, p := range parts {
		cur, exists := m[p]
		if !exists {
			return fmt.Errorf("unknown key %q", strings.Join(parts[:i+1], "."))
		}
		if i == len(parts)-1 {
			if _, isMap := cur.(map[string]any); isMap {
				return fmt.Errorf("key %q is a section, not a value", key)
			}
			var v any
			if err := yaml.Unmarshal([]byte(value), &v); err != nil {
				return fmt.Errorf("value: %w", err)
			}
			if v == nil {
				v = ""
			}
			m[p] = v
			return nil
		}
		next, isMap := cur.(map[string]any)
		if !isMap {
			return fmt.Errorf("key %q is a value, not a section", strings.Join(parts[:i+1], "."))
		}
		m = next
	}
	return nil
}

var (
	durationRE  = regexp.MustCompile(`^([0-9]+(ms|s|m|h|d|w|y))+$`)
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	severityRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// Validate checks every parameter, naming the offending key.
func (p Profile) Validate() error {
	var errs []error
	dur := func(key, v string, optional bool) {
		if v == "" && optional {
			return
		}
		if !durationRE.MatchString(v) || strings.Trim(v, "0smhdwy") == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive Prometheus duration (e.g. 30s, 5m)", key, v))
		}
	}
	if !strings.HasPrefix(p.RunbookBase, "https://") && !strings.HasPrefix(p.RunbookBase, "http://") {
		errs = append(errs, fmt.Errorf("runbook_base: %q is not an http(s) URL", p.RunbookBase))
	}
	dur("rate_window", p.RateWindow, false)
	dur("gauge_window", p.GaugeWindow, false)
	dur("eval_interval", p.EvalInterval, true)
	dur("record_interval", p.RecordInterval, false)
	if d, err := model.ParseDuration(p.RecordInterval); err == nil && time.Duration(d) > 5*time.Minute {
		errs = append(errs, fmt.Errorf("record_interval: %q is longer than Prometheus' 5m lookback: the history would have holes", p.RecordInterval))
	}
	if p.RoleLabel != "" && !labelNameRE.MatchString(p.RoleLabel) {
		errs = append(errs, fmt.Errorf("role_label: %q is not a valid label name", p.RoleLabel))
	}
	if err := p.naming().Validate(); err != nil {
		errs = append(errs, err)
	}
	if !labelNameRE.MatchString(p.PodLabel) {
		errs = append(errs, fmt.Errorf("pod_label: %q is not a valid label name", p.PodLabel))
	}
	alert := func(key string, a Alert, maxThreshold float64) {
		if !(a.Threshold > 0) || (maxThreshold > 0 && a.Threshold > maxThreshold) {
			limit := ""
			if maxThreshold > 0 {
				limit = fmt.Sprintf(" and at most %g", maxThreshold)
			}
			errs = append(errs, fmt.Errorf("alerts.%s.threshold: %g must be above 0%s", key, a.Threshold, limit))
		}
		dur("alerts."+key+".for", a.For, false)
		if !severityRE.MatchString(a.Severity) {
			errs = append(errs, fmt.Errorf("alerts.%s.severity: %q must be a lower-case word such as warning or critical", key, a.Severity))
		}
	}
	alert("ttft", p.Alerts.TTFT, 0)
	alert("itl", p.Alerts.ITL, 0)
	alert("spec_decode", p.Alerts.SpecDecode.Alert, 1)
	if !(p.Alerts.SpecDecode.MinBaseline > 0) {
		errs = append(errs, fmt.Errorf("alerts.spec_decode.min_baseline: %g must be above 0 (a baseline of no accepted tokens cannot fall)", p.Alerts.SpecDecode.MinBaseline))
	}
	if !(p.Alerts.SpecDecode.TPOTRise >= 1) {
		errs = append(errs, fmt.Errorf("alerts.spec_decode.tpot_rise: %g must be at least 1 (the time per output token must have risen)", p.Alerts.SpecDecode.TPOTRise))
	}
	dur("alerts.spec_decode.baseline_window", p.Alerts.SpecDecode.BaselineWindow, false)
	alert("kv_cache", p.Alerts.KVCache, 1)
	alert("abort", p.Alerts.Abort.Alert, 1)
	alert("kv_transfer", p.Alerts.KVTransfer, 0)
	alert("queue", p.Alerts.Queue, 0)
	alert("stall", p.Alerts.Stall.Alert, 0)
	if !(p.Alerts.Stall.IdleConnections >= 1) {
		errs = append(errs, fmt.Errorf("alerts.stall.idle_connections: %g must be at least 1 (an idle hang shows as requests the API server holds)", p.Alerts.Stall.IdleConnections))
	}
	if p.GPU.Enabled {
		for _, l := range [][2]string{{"gpu.pod_label", p.GPU.PodLabel}, {"gpu.namespace_label", p.GPU.NamespaceLabel}, {"gpu.node_label", p.GPU.NodeLabel}} {
			if !labelNameRE.MatchString(l[1]) {
				errs = append(errs, fmt.Errorf("%s: %q is not a valid label name", l[0], l[1]))
			}
		}
	}
	if p.GPU.Enabled && p.GPU.PodLabel == vllmnames.DefaultPodLabel && p.PodLabel != vllmnames.DefaultPodLabel {
		// The rules group vLLM's series by pod_label; a GPU grouping on "pod" would be rewritten too.
		errs = append(errs, fmt.Errorf("gpu.pod_label: %q with pod_label %q: the GPU rule cannot tell the two apart; relabel one of them, or set gpu.enabled false", p.GPU.PodLabel, p.PodLabel))
	}
	g := p.Alerts.GPUFault
	if len(g.XIDs) == 0 {
		errs = append(errs, errors.New("alerts.gpu_fault.xids: empty (list the XIDs that mean drain the node or reset the GPU)"))
	}
	for _, x := range g.XIDs {
		if x <= 0 {
			errs = append(errs, fmt.Errorf("alerts.gpu_fault.xids: %d is not an XID", x))
		}
	}
	dur("alerts.gpu_fault.recent", g.Recent, false)
	if !(g.NVLinkCRCRate > 0) {
		errs = append(errs, fmt.Errorf("alerts.gpu_fault.nvlink_crc_rate: %g must be above 0", g.NVLinkCRCRate))
	}
	dur("alerts.gpu_fault.for", g.For, false)
	if !severityRE.MatchString(g.Severity) {
		errs = append(errs, fmt.Errorf("alerts.gpu_fault.severity: %q must be a lower-case word such as warning or critical", g.Severity))
	}
	if !(p.Alerts.Abort.MinStartedRate > 0) {
		errs = append(errs, fmt.Errorf("alerts.abort.min_started_rate: %g must be above 0 (it keeps idle models quiet)", p.Alerts.Abort.MinStartedRate))
	}
	return errors.Join(errs...)
}

// Old vLLM versions (before #15202) had lower top histogram buckets; histogram_quantile
// cannot report a p99 above them.
const (
	oldTTFTTopBucket = 10
	oldITLTopBucket  = 2.5
)

// Warnings lists valid but questionable settings.
func (p Profile) Warnings() []string {
	var w []string
	if p.Alerts.TTFT.Threshold > oldTTFTTopBucket {
		w = append(w, fmt.Sprintf("alerts.ttft.threshold %g s is above vLLM's top TTFT bucket before #15202 (%g s): such pods can never fire", p.Alerts.TTFT.Threshold, float64(oldTTFTTopBucket)))
	}
	if p.Alerts.ITL.Threshold > oldITLTopBucket {
		w = append(w, fmt.Sprintf("alerts.itl.threshold %g s is above vLLM's top TPOT bucket before #15202 (%g s): such pods can never fire", p.Alerts.ITL.Threshold, oldITLTopBucket))
	}
	return w
}

var tmpl = template.Must(template.New("vllm-alerts.rules.yml.tmpl").
	Delims("<<", ">>").
	Option("missingkey=error").
	Funcs(template.FuncMap{
		"num": func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
		"pct": func(f float64) string { return strconv.FormatFloat(f*100, 'f', -1, 64) + "%" },
		// alternation: 46|48|79, for a label matcher
		"alternation": func(xs []int) string {
			s := make([]string, len(xs))
			for i, x := range xs {
				s[i] = strconv.Itoa(x)
			}
			return strings.Join(s, "|")
		},
	}).
	Parse(rulesTemplate))

// Render renders the rules file for p and checks that the result is a rules file
// defining exactly the built-in alerts.
func Render(p Profile) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	rf, err := ParseRules(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("rendered rules (profile %q): %w", p.Name, err)
	}
	adapted, err := p.adapt(buf.Bytes(), rf)
	if err != nil {
		return nil, fmt.Errorf("rendered rules (profile %q): %w", p.Name, err)
	}
	buf.Reset()
	buf.Write(adapted)
	var got, records []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records = append(records, r.Record)
			} else {
				got = append(got, r.Alert)
			}
		}
	}
	if want := p.AlertNames(); !slices.Equal(got, want) {
		return nil, fmt.Errorf("rendered rules (profile %q) define alerts %v, want %v", p.Name, got, want)
	}
	if !slices.Equal(records, RecordNames) {
		return nil, fmt.Errorf("rendered rules (profile %q) record %v, want %v", p.Name, records, RecordNames)
	}
	return buf.Bytes(), nil
}

// AlertNames are the alerts p's rules define: all of AlertNames, less the GPU alert where
// gpu.enabled is false.
func (p Profile) AlertNames() []string {
	if p.GPU.Enabled {
		return AlertNames
	}
	return slices.DeleteFunc(slices.Clone(AlertNames), func(a string) bool { return a == GPUAlertName })
}

// RenderProfile loads the named profile with overrides and renders it.
func RenderProfile(name string, overrides ...string) ([]byte, error) {
	p, err := LoadProfile(name, overrides...)
	if err != nil {
		return nil, err
	}
	return Render(p)
}

// RulesFile is the subset of the Prometheus rules file format these rules use.
type RulesFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval,omitempty"`
		Rules    []Rule `yaml:"rules"`
	} `yaml:"groups"`
}

// Rule is one alerting or recording rule.
type Rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// ParseRules decodes a rules file strictly.
func ParseRules(b []byte) (*RulesFile, error) {
	var rf RulesFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		return nil, err
	}
	for gi, g := range rf.Groups {
		for ri, r := range g.Rules {
			switch {
			case r.Record != "" && (r.Alert != "" || strings.TrimSpace(r.Expr) == "" || r.For != "" || len(r.Annotations) > 0):
				return nil, fmt.Errorf("groups[%d].rules[%d]: a recording rule has record and expr, and no alert, for or annotations", gi, ri)
			case r.Record == "" && (r.Alert == "" || strings.TrimSpace(r.Expr) == "" || r.For == ""):
				return nil, fmt.Errorf("groups[%d].rules[%d]: alert, expr and for are required", gi, ri)
			}
		}
	}
	return &rf, nil
}
