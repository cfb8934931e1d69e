package profile

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/store"
)

// loadConfig decodes a profile section as the responder's config loader does: defaults, strict
// decoding, validation (the files write their durations as Go does, which both syntaxes share).
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

// The section's errors, every one of them, are pinned through the responder's loader in
// config/testdata/bad. New validates a Config that was not and says so under the section's
// name, once.
func TestNewNamesTheSectionOnceAndEveryError(t *testing.T) {
	cfg := testConfig()
	cfg.DefaultDuration, cfg.AllowedNetworks = 0, []string{"10.0.0.1"}
	_, err := New(cfg, Deps{Prometheus: &staticProm{}, Store: store.NewMemory()})
	want := "profile.default_duration: must be positive, got 0s\n" +
		`profile.allowed_networks[0]: "10.0.0.1" is not a CIDR (10.0.0.0/8, fd00::/8)`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

func TestConfigDefaultsAndAValidConfigLoad(t *testing.T) {
	c, err := loadConfig("testdata/config/defaults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]time.Duration{
		"default_duration": {c.DefaultDuration, 10 * time.Second},
		"max_duration":     {c.MaxDuration, time.Minute},
		"stop_timeout":     {c.StopTimeout, 15 * time.Minute},
		"cooldown":         {c.Cooldown, 10 * time.Minute},
		"lock_ttl":         {c.LockTTL, time.Minute},
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
