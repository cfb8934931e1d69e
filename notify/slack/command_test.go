package slack

import (
	"strings"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	cases := []struct {
		text    string
		want    command
		wantErr string
	}{
		{"", command{Sub: subHelp}, ""},
		{"help", command{Sub: subHelp}, ""},
		{"  TRIAGE  ", command{Sub: subTriage}, ""},
		{"triage meta-llama/Llama-3.1-8B-Instruct", command{Sub: subTriage, Model: "meta-llama/Llama-3.1-8B-Instruct"}, ""},
		{"triage qwen2.5:7b vllm-qwen-7d9f-abc12", command{Sub: subTriage, Model: "qwen2.5:7b", Pod: "vllm-qwen-7d9f-abc12"}, ""},
		{"triage - vllm-0", command{Sub: subTriage, Pod: "vllm-0"}, ""},
		{"profile vllm-0", command{Sub: subProfile, Pod: "vllm-0"}, ""},
		{"profile vllm-0 30s", command{Sub: subProfile, Pod: "vllm-0", Duration: 30 * time.Second}, ""},
		{"profile vllm-0 20", command{Sub: subProfile, Pod: "vllm-0", Duration: 20 * time.Second}, ""},
		{"status", command{Sub: subStatus}, ""},
		{`triage m"}[5m])`, command{}, "not a model name"},
		{`triage llama {pod=~".*"}`, command{}, "not a Kubernetes pod name"},
		{"triage a b c", command{}, "takes at most"},
		{"triage llama Vllm_0", command{}, "not a Kubernetes pod name"},
		{"triage &lt;script&gt;", command{}, "not a model name"},
		{"profile", command{}, "takes a pod"},
		{"profile vllm-0 forever", command{}, "not a duration"},
		{"profile vllm-0 1h", command{}, "between 1s and 5m0s"},
		{"profile vllm-0 -5s", command{}, "between"},
		{"status now", command{}, "takes no arguments"},
		{"rm -rf /", command{}, "unknown subcommand `rm`"},
		{strings.Repeat("a", 600), command{}, "too long"},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			got, err := parseCommand(c.text)
			if c.wantErr != "" {
				if err == nil || !isUsageError(err) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want a usage error containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// FuzzParseCommand checks that no input panics, that what is accepted is within the charset that
// may reach PromQL, and that an accepted command reads back the same.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"triage", "triage m p", "profile p 10s", "status", "help", "triage - p", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseCommand(text)
		if err != nil {
			if !isUsageError(err) {
				t.Fatalf("%q: non-usage error %v", text, err)
			}
			if strings.ContainsAny(err.Error(), "<>&") {
				t.Fatalf("%q: error echoes markup: %v", text, err)
			}
			return
		}
		if c.Model != "" && !validModel(c.Model) || c.Pod != "" && !validPod(c.Pod) {
			t.Fatalf("%q: accepted invalid scope %+v", text, c)
		}
		for _, v := range c.Labels() {
			if strings.ContainsAny(v, "\"\\{}()[]=~!, \n") {
				t.Fatalf("%q: label value %q could break PromQL", text, v)
			}
		}
		again, err := parseCommand(c.String())
		if err != nil || again != c {
			t.Fatalf("%q: %+v reads back as %+v, %v", text, c, again, err)
		}
	})
}
