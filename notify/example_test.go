package notify_test

import (
	"fmt"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// A new integration maps the view to its markup, and nothing more: here, a one-line-per-alert
// chat message (what a Mattermost or Discord notifier would send, escaped for its markup).
func ExampleNewView() {
	start := time.Date(2025, 6, 1, 11, 50, 0, 0, time.UTC)
	n := &notify.Notification{
		GroupKey: "g", Status: notify.StatusFiring, ExternalURL: "javascript:alert(1)", ReceivedAt: start.Add(10 * time.Minute),
		GroupLabels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		Items: []notify.Item{
			{Alert: template.Alert{Status: "firing", StartsAt: start, GeneratorURL: "http://prometheus:9090/graph?g0.expr=x",
				Labels: template.KV{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "llama", "pod": "vllm\u202egnp.exe"}},
				Diagnosis: &playbooks.Diagnosis{Verdict: playbooks.VerdictCapacityPastKnee, Title: "Capacity, past the knee: add replicas"}},
			{Alert: template.Alert{Status: "resolved", StartsAt: start, EndsAt: start.Add(23 * time.Minute),
				Labels: template.KV{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "llama", "pod": "vllm-1"}}},
		},
	}
	v := notify.NewView(n, notify.ViewOptions{StormThreshold: 5})
	fmt.Println(v.Headline())
	for _, a := range v.Firing {
		fmt.Printf("- [%s] %s: %s (%s)\n", a.Diagnosis.Class, a.Diagnosis.Verdict, a.Diagnosis.Title, a.Scope[1].Value)
		for _, l := range a.Links {
			fmt.Printf("  %s: %s\n", l.Title, l.URL)
		}
	}
	for _, r := range v.Resolved {
		d, _ := r.Lasted()
		fmt.Printf("- resolved: %s after %s\n", r.Pod, notify.HumanDuration(d))
	}
	fmt.Println("Alertmanager link:", v.Alertmanager != nil)
	// Output:
	// FIRING: VLLMTimeToFirstTokenP99High
	// - [problem] capacity-past-knee: Capacity, past the knee: add replicas (vllm<U+202E>gnp.exe)
	//   Alert query in Prometheus: http://prometheus:9090/graph?g0.expr=x
	// - resolved: vllm-1 after 23m
	// Alertmanager link: false
}
