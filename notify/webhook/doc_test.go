package webhook

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTheDocsPythonVerifierAcceptsOurSignatureAndRefusesReplays runs the receiver snippet of
// docs/deploy.md ("Signed webhooks") with python3, an implementation that shares nothing with
// this package, on requests signed here.
func TestTheDocsPythonVerifierAcceptsOurSignatureAndRefusesReplays(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```python\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deploy.md has no python block")
	}
	key, err := Key(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"diagnosis.firing","data":{}}`)
	now := time.Now().Unix()
	type req struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	sign := func(id string, ts int64, b []byte) req {
		return req{Headers: map[string]string{"webhook-id": id, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": Sign(key, id, ts, b)},
			Body: base64.StdEncoding.EncodeToString(b)}
	}
	fresh := sign("msg_1", now, body)
	tampered := fresh
	tampered.Body = base64.StdEncoding.EncodeToString([]byte(`{"type":"diagnosis.resolved","data":{}}`))
	reqs := []req{fresh, fresh, tampered, sign("msg_2", now-6*60, body), sign("msg_3", now, body)}
	in, _ := json.Marshal(map[string]any{"secret": testSecret, "requests": reqs})
	driver := string(m[1]) + `
import json, sys
d = json.load(sys.stdin)
seen = set()
print(" ".join(str(verify(d["secret"], r["headers"], base64.b64decode(r["body"]), seen)) for r in d["requests"]))
`
	cmd := exec.Command("python3", "-c", driver)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "True False False False True"; got != want {
		t.Errorf("fresh, replayed, tampered, six minutes old, another fresh: %s, want %s", got, want)
	}
}
