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
