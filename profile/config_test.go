package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// loadConfig decodes a profile section the way the responder's config loader does: defaults,
// strict decoding, validation.
func loadConfig(path string) (Config, error) {
	var c Config
	c.SetDefaults()
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for file, want := range map[string]string{
		"default_over_max.yaml":         "default_duration: 2m exceeds max_duration 1m",
		"negative_stop_timeout.yaml":    "not a valid duration string", // model.Duration refuses it while decoding
		"url_without_scheme.yaml":       `url_template: must render an http(s) URL with a host, got "10.0.0.1:8000"`,
		"url_unknown_label.yaml":        `url_template: template: url_template:1:9: executing "url_template" at <.host>: map has no entry for key "host"`,
		"url_bad_template.yaml":         "url_template: template: url_template:1: unclosed action",
		"network_not_cidr.yaml":         `allowed_networks[1]: "10.0.0.1" is not a CIDR (10.0.0.0/8, fd00::/8)`,
		"lock_ttl_too_short.yaml":       "lock_ttl: must be at least 1s (it is refreshed every third of it), got 500ms",
		"negative_cooldown.yaml":        "not a valid duration string",
		"unknown_key.yaml":              "field stop_timout not found in type profile.Config",
		"kind_unknown_profiler.yaml":    `kinds[0].profiler: must be one of torch, cuda, proton, got "cude"`,
		"kind_unknown_label.yaml":       `kinds[1].match: unknown label "cluster" (one of namespace, pod, model_name)`,
		"kind_bad_regex.yaml":           "kinds[0].match.pod: error parsing regexp: missing closing ): `canary-(.*`",
		"kind_dir_not_torch.yaml":       "kinds[0].torch_profiler_dir: only for profiler: torch (with cuda, vLLM writes no torch traces)",
		"kind_dir_unknown_store.yaml":   `kinds[0].torch_profiler_dir: unsupported object store "az" (s3://, gs://), got "az://c/traces"`,
		"kind_dir_relative.yaml":        `kinds[0].torch_profiler_dir: must be an absolute path or an s3:// or gs:// URI, got "traces/vllm-0"`,
		"kind_dir_no_bucket.yaml":       `kinds[0].torch_profiler_dir: s3 URI without a bucket: "s3:///traces"`,
		"silence_bad_regex.yaml":        "silence.alertnames: error parsing regexp: missing closing ): `VLLM(.*`",
		"silence_zero_flush.yaml":       "silence.expected_flush: must be positive, got 0s",
		"trace_hint_unknown_label.yaml": `trace_dir_hint: template: trace_dir_hint:1:2: executing "trace_dir_hint" at <.node>: map has no entry for key "node"`,
	} {
		t.Run(file, func(t *testing.T) {
			_, err := loadConfig(filepath.Join("testdata/config", file))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v\nwant %s", err, want)
			}
		})
	}
}

func TestConfigDefaultsAndAValidConfigLoad(t *testing.T) {
	c, err := loadConfig("testdata/config/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]time.Duration{
		"default_duration": {time.Duration(c.DefaultDuration), 10 * time.Second},
		"max_duration":     {time.Duration(c.MaxDuration), time.Minute},
		"stop_timeout":     {time.Duration(c.StopTimeout), 15 * time.Minute},
		"cooldown":         {time.Duration(c.Cooldown), 10 * time.Minute},
		"lock_ttl":         {time.Duration(c.LockTTL), time.Minute},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %s, want %s", name, got[0], got[1])
		}
	}
	if c.URLTemplate != DefaultURLTemplate {
		t.Errorf("url_template = %q", c.URLTemplate)
	}

	c, err = loadConfig("testdata/config/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Cooldown != 0 {
		t.Errorf("an explicit cooldown: 0s must stay 0, got %s", c.Cooldown)
	}
	u, err := c.render(c.urlTmpl, "10.1.2.3:8000", "vllm-0", "llm")
	if err != nil || u != "https://vllm-0.llm.svc:8000" {
		t.Errorf("url = %q, %v", u, err)
	}
	if len(c.networks) != 2 {
		t.Errorf("networks = %v", c.networks)
	}
}

func TestTheBearerTokenNeverAppearsInAMarshalledConfig(t *testing.T) {
	c, err := loadConfig("testdata/config/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.BearerToken.Reveal() != "tok" {
		t.Fatalf("token not loaded")
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "tok\n") || !strings.Contains(string(b), "bearer_token: <secret>") {
		t.Fatalf("marshalled config:\n%s", b)
	}
}
