package configerr

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestPrefixPlacesEveryErrorUnderItsSectionOnce(t *testing.T) {
	kind := errors.Join(New("profiler", "must be one of torch, cuda"), New("match.pod", "bad regex"))
	section := errors.Join(
		New("default_duration", "2m exceeds max_duration 1m"),
		errors.New("at most one of basic_auth, oauth2 & authorization must be configured"),
		Prefix("kinds[0]", kind),
		New(`tags["k8s.pod.name"]`, "unclosed action"),
		nil,
	)
	got := Prefix("profile", section)
	want := "profile.default_duration: 2m exceeds max_duration 1m\n" +
		"profile: at most one of basic_auth, oauth2 & authorization must be configured\n" +
		"profile.kinds[0].profiler: must be one of torch, cuda\n" +
		"profile.kinds[0].match.pod: bad regex\n" +
		`profile.tags["k8s.pod.name"]: unclosed action`
	if got.Error() != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if n := len(List(got)); n != 5 {
		t.Fatalf("the prefixed error joins %d errors, want 5", n)
	}
	if got := Prefix("", New("listen", "required")); got.Error() != "listen: required" {
		t.Fatalf("no section: %v", got)
	}
	if got := Prefix("items", New("[2]", "empty")); got.Error() != "items[2]: empty" {
		t.Fatalf("an index joins without a dot: %v", got)
	}
}

func TestPrefixOfNothingIsNil(t *testing.T) {
	if err := Prefix("slack", nil); err != nil {
		t.Fatalf("got %v", err)
	}
	if err := Prefix("slack", errors.Join(nil, nil)); err != nil {
		t.Fatalf("got %v", err)
	}
}

func TestAnErrorWrappingTwoIsOneError(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	err := fmt.Errorf("%w: %w", a, b)
	if n := len(List(err)); n != 1 {
		t.Fatalf("List split %q into %d errors", err, n)
	}
	if got := Prefix("s", err).Error(); got != "s: a: b" {
		t.Fatalf("got %q", got)
	}
}

func TestWrappedCausesStayReachable(t *testing.T) {
	cause := errors.New("no such file")
	err := Prefix("traces", New("authorization.credentials_file", "open x: %w", cause))
	if !errors.Is(err, cause) {
		t.Fatal("errors.Is no longer finds the cause")
	}
}

func TestFormatDurationWritesTheConfigSyntax(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 90 * time.Second: "1m30s", 7 * 24 * time.Hour: "1w", 500 * time.Millisecond: "500ms"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
