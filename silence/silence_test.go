package silence

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

const amConfig = `
route: {receiver: "null"}
receivers: [{name: "null"}]
`

func TestASilenceCreatedForAnAlertsLabelsIsInTheRealAlertmanager(t *testing.T) {
	am := testenv.Alertmanager(t, amConfig)
	c, err := New(am.URL, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"alertname": "VLLMKVCacheNearFull", "pod": "vllm-0", "model_name": "m/x", "empty": ""}
	id, err := c.Create(context.Background(), ForLabels(labels, time.Now(), time.Hour, "slack:alice (U1)", "Silenced from Slack by alice for 1h"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(am.URL + "/api/v2/silence/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		CreatedBy string    `json:"createdBy"`
		Matchers  []Matcher `json:"matchers"`
		Status    struct{ State string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.CreatedBy != "slack:alice (U1)" || got.Status.State != "active" || len(got.Matchers) != 3 {
		t.Errorf("silence %+v", got)
	}
}

func TestAlertmanagerErrorsAreReportedWithoutCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad matchers", http.StatusBadRequest)
	}))
	defer srv.Close()
	c, err := New(strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1), nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(context.Background(), ForLabels(map[string]string{"a": "b"}, time.Now(), time.Hour, "x", "y"))
	if err == nil || !strings.Contains(err.Error(), "HTTP 400: bad matchers") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}

func TestASilenceWithoutMatchersIsRefused(t *testing.T) {
	c, _ := New("http://127.0.0.1:1", nil, time.Second)
	if _, err := c.Create(context.Background(), ForLabels(nil, time.Now(), time.Hour, "x", "y")); err == nil {
		t.Error("a silence of everything was sent")
	}
}

func TestAnUnreachableAlertmanagerTimesOutWithItsCause(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	c, _ := New(srv.URL, nil, 20*time.Millisecond)
	_, err := c.Create(context.Background(), ForLabels(map[string]string{"a": "b"}, time.Now(), time.Hour, "x", "y"))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err = %v", err)
	}
}

func TestASilenceCanBeExtendedAndExpiredInTheRealAlertmanager(t *testing.T) {
	am := testenv.Alertmanager(t, amConfig)
	c, err := New(am.URL, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := Silence{Matchers: []Matcher{{Name: "pod", Value: "vllm-0", IsEqual: true}, {Name: "alertname", Value: "VLLM.+", IsRegex: true, IsEqual: true}},
		StartsAt: time.Now(), EndsAt: time.Now().Add(time.Minute), CreatedBy: "alice", Comment: "profile capture"}
	id, err := c.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	id2, err := c.SetEnd(ctx, id, end)
	if err != nil || id2 == "" {
		t.Fatalf("SetEnd = %q, %v", id2, err)
	}
	got, err := c.Get(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StateActive || !got.EndsAt.Equal(end) || got.Comment != "profile capture" || len(got.Matchers) != 2 {
		t.Fatalf("extended silence = %+v, want active until %s", got, end)
	}
	if id2 != id {
		// Alertmanager replaced it: the old one must not stay active beside the new one.
		if old, err := c.Get(ctx, id); err != nil || old.Status != StateExpired {
			t.Fatalf("replaced silence = %+v, %v", old, err)
		}
	}
	if err := c.Expire(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, id2); err != nil || got.Status != StateExpired {
		t.Fatalf("after Expire: %+v, %v", got, err)
	}
	if err := c.Expire(ctx, id2); err != nil {
		t.Errorf("expiring an expired silence: %v", err)
	}
	if id3, err := c.SetEnd(ctx, id2, end); err != nil || id3 != "" {
		t.Errorf("SetEnd of an expired silence = %q, %v; want it left alone", id3, err)
	}
	if _, err := c.Get(ctx, "00000000-0000-0000-0000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown silence: %v", err)
	}
}
