package notify

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterIsReadAsSecondsOrAsADate(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"7":   7 * time.Second,
		" 0 ": 0,
		"-3":  0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		"soon": 0,
		"":     0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestOnlyRateLimitsTimeoutsAndServerErrorsAreRetryable(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 403: false, 404: false, 408: true, 413: false, 429: true, 500: true, 502: true, 503: true} {
		if got := (&HTTPError{Status: status}).Retryable(); got != want {
			t.Errorf("HTTP %d retryable = %v, want %v", status, got, want)
		}
	}
}
