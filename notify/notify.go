// Package notify delivers diagnoses to people. Each destination (Slack, the console) implements the
// one-method Notifier interface; retries, their timing and their metrics live in the Retrying
// wrapper (retry.go), not in each notifier.
package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Source says where a notification came from.
type Source string

const (
	SourceAlertmanager Source = "alertmanager"
	SourceSlack        Source = "slack"
	SourceCLI          Source = "cli"
)

// Status of a notification, as Alertmanager uses it.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Notification is one delivery for one Alertmanager group (or one on-demand triage).
// Items holds only what is new in this delivery: firing alerts not diagnosed before, or the
// alerts that resolved.
type Notification struct {
	GroupKey          string
	Status            string
	Receiver          string
	ExternalURL       string
	GroupLabels       map[string]string
	CommonLabels      map[string]string
	CommonAnnotations map[string]string
	// TruncatedAlerts is how many alerts Alertmanager left out of the payload (max_alerts).
	TruncatedAlerts uint64
	Items           []Item
	Source          Source
	ReceivedAt      time.Time
	// Incident is the incident the items belong to, as it stands after them (incident.go); nil
	// with incidents off, for alerts without a key label, and for on-demand diagnoses.
	Incident *Incident
}

// Item is one alert with its diagnosis. Diagnosis is nil for a resolved alert, and for a firing
// alert no playbook matched (Unmatched is then true).
type Item struct {
	Alert     template.Alert
	Diagnosis *playbooks.Diagnosis
	Unmatched bool
}

// Resolved reports whether this is a resolution rather than a new incident.
func (n *Notification) Resolved() bool { return n.Status == StatusResolved }

// Notifier sends a notification somewhere. It returns retry=true when the failure is transient
// (a rate limit, a 5xx) and the wrapper may try again.
type Notifier interface {
	Notify(ctx context.Context, n *Notification) (retry bool, err error)
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, n *Notification) (bool, error)

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, n *Notification) (bool, error) { return f(ctx, n) }

// GroupHash names an Alertmanager group in store keys: the hex of the first 16 bytes of the
// SHA-256 of its group key (a group key can be long and holds label values).
func GroupHash(groupKey string) string {
	h := sha256.Sum256([]byte(groupKey))
	return hex.EncodeToString(h[:16])
}
