package silence

import (
	"context"
	"encoding/json"
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
