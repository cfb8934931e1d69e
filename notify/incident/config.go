package incident

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/alertmanager/pkg/labels"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
)

// Config is the `incidents:` section: which alerts one incident joins, and for how long.
type Config struct {
	// Enabled joins the alerts of one key into one incident (default true); off, every
	// Alertmanager group is a thread of its own.
	Enabled bool `yaml:"enabled"`
	// Key are the alert labels that name an incident (default namespace and model_name: one
	// incident per model and namespace). An alert that lacks one of them stays in its group's
	// own thread.
	Key []string `yaml:"key"`
	// QuietTime keeps an incident after its last alert resolved (default 15m): an alert of its
	// key that fires within it rejoins the incident instead of opening another. 0: none.
	QuietTime time.Duration `yaml:"quiet_time"`
	// SymptomMatchers pick the alerts that measure what users feel (latency, errors, aborts)
	// rather than a mechanism: such an alert is listed as a symptom whatever its verdict. Each
	// entry is one Alertmanager matcher (alertname=~"..."); an alert is a symptom when it
	// matches every entry, as inhibit_rules' target_matchers do. Default: the built-in TTFT,
	// ITL and abort-rate alerts; [] makes no alert a symptom by its name alone.
	SymptomMatchers []string `yaml:"symptom_matchers"`

	symptoms labels.Matchers // SymptomMatchers, compiled by Validate
}

// DefaultSymptomMatchers are the built-in alerts that measure what users feel.
var DefaultSymptomMatchers = []string{`alertname=~"VLLMTimeToFirstTokenP99High|VLLMInterTokenLatencyP99High|VLLMRequestAbortRateHigh"`}

// Bounds of the section.
const (
	maxKeyLabels = 5
	maxQuietTime = 24 * time.Hour
)

// SetDefaults fills what the file left out.
func (c *Config) SetDefaults() {
	c.Enabled = true
	c.Key = []string{"namespace", "model_name"}
	c.QuietTime = 15 * time.Minute
	c.SymptomMatchers = slices.Clone(DefaultSymptomMatchers)
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate checks the section and compiles its matchers. It returns every error, each naming its
// key inside the section (configerr); the caller adds "incidents.".
func (c *Config) Validate() error {
	var errs []error
	switch {
	case len(c.Key) == 0 && c.Enabled:
		errs = append(errs, configerr.New("key", "at least one label (namespace and model_name: one incident per model), or enabled: false"))
	case len(c.Key) > maxKeyLabels:
		errs = append(errs, configerr.New("key", "at most %d labels, got %d", maxKeyLabels, len(c.Key)))
	}
	for i, l := range c.Key {
		key := fmt.Sprintf("key[%d]", i)
		switch {
		case !labelNameRE.MatchString(l):
			errs = append(errs, configerr.New(key, "%q is not a valid label name", l))
		case l == "alertname":
			errs = append(errs, configerr.New(key, "alertname would make every alert name an incident of its own: an incident joins alerts across names"))
		case slices.Contains(c.Key[:i], l):
			errs = append(errs, configerr.New(key, "%q is listed twice", l))
		}
	}
	if c.QuietTime < 0 || c.QuietTime > maxQuietTime {
		errs = append(errs, configerr.New("quiet_time", "must be between 0s and %s, got %s", configerr.FormatDuration(maxQuietTime), configerr.FormatDuration(c.QuietTime)))
	}
	c.symptoms = nil
	for i, s := range c.SymptomMatchers {
		m, err := labels.ParseMatcher(s)
		if err != nil {
			errs = append(errs, configerr.New(fmt.Sprintf("symptom_matchers[%d]", i), "%q is not an Alertmanager matcher like alertname=~\"VLLM.*LatencyP99High\": %v", s, err))
			continue
		}
		c.symptoms = append(c.symptoms, m)
	}
	return errors.Join(errs...)
}

// symptom reports whether an alert of these labels measures what users feel.
func (c *Config) symptom(l map[string]string) bool {
	if len(c.symptoms) == 0 {
		return false
	}
	for _, m := range c.symptoms {
		if !m.Matches(l[m.Name]) {
			return false
		}
	}
	return true
}
