package secret

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSecretNeverPrintsItsValue(t *testing.T) {
	s := Secret("xoxb-very-secret")
	type holder struct {
		Token Secret `json:"token" yaml:"token"`
	}
	j, _ := json.Marshal(holder{s})
	var back holder
	if err := json.Unmarshal(j, &back); err != nil || back.Token != Redacted {
		t.Errorf("json round trip = %q, %v; want %q", back.Token, err, Redacted)
	}
	y, _ := yaml.Marshal(holder{s})
	for name, out := range map[string]string{
		"fmt %v":  fmt.Sprintf("%v", s),
		"fmt %s":  fmt.Sprintf("%s", s),
		"fmt %+v": fmt.Sprintf("%+v", holder{s}),
		"fmt %#v": fmt.Sprintf("%#v", holder{s}),
		"yaml":    string(y),
	} {
		if strings.Contains(out, "very-secret") {
			t.Errorf("%s leaks the secret: %s", name, out)
		}
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s does not say %s: %s", name, Redacted, out)
		}
	}
	if s.Reveal() != "xoxb-very-secret" {
		t.Fatal("Reveal lost the value")
	}
	if Secret("").String() != "" {
		t.Fatal("an unset secret should print empty")
	}
}

// A URL prints without what may be its credential: URL without the password and the query
// string, TokenURL (a webhook URL whose path or query is the credential) as scheme and host only.
func TestURLsPrintWithoutTheirCredentials(t *testing.T) {
	type holder struct {
		Conn URL      `json:"conn" yaml:"conn"`
		Hook TokenURL `json:"hook" yaml:"hook"`
	}
	h := holder{URL("http://reader:pw-SECRET@prom:9090/prefix?api_key=key-SECRET#frag-SECRET"),
		TokenURL("https://hooks.example.com/v1/path-SECRET?token=query-SECRET")}
	j, _ := json.Marshal(h)
	y, _ := yaml.Marshal(h)
	for name, out := range map[string]string{
		"fmt %v": fmt.Sprintf("%v %v", h.Conn, h.Hook), "fmt %+v": fmt.Sprintf("%+v", h), "fmt %#v": fmt.Sprintf("%#v", h),
		"json": string(j), "yaml": string(y),
	} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("%s leaks a credential: %s", name, out)
		}
		if !strings.Contains(out, "http://reader:xxxxx@prom:9090/prefix?xxxxx") || !strings.Contains(out, "https://hooks.example.com") {
			t.Errorf("%s does not show what is safe to show: %s", name, out)
		}
	}
	if h.Hook.String() != "https://hooks.example.com" || h.Hook.Reveal() != "https://hooks.example.com/v1/path-SECRET?token=query-SECRET" {
		t.Errorf("TokenURL prints %q, reveals %q", h.Hook.String(), h.Hook.Reveal())
	}
	if URL("http://prom:9090").String() != "http://prom:9090" || TokenURL("").String() != "" {
		t.Error("a URL without credentials must print as it is, an empty one empty")
	}
}
