package playbooks

import "testing"

func TestSinceSaysWhenAGaugeNowDiffersALotFromItsWindow(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name        string
		window, now *float64
		unit, want  string
	}{
		{"a batch that drained after the window's overload has eased", f(180), f(3), "count", " (eased since: 3 now)"},
		{"a queue that tripled has worsened", f(40), f(130), "count", " (worsened since: 130 now)"},
		{"a small wobble says nothing", f(100), f(90), "count", ""},
		{"a change of one request is not worth a word", f(1), f(0), "count", ""},
		{"a KV cache that emptied has eased", f(1), f(0.3), "ratio", " (eased since: 30% now)"},
		{"a missing value says nothing", f(10), nil, "count", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now any = tc.now
			if got := since(tc.window, now, tc.unit); got != tc.want {
				t.Fatalf("since(%v, %v) = %q, want %q", *tc.window, tc.now, got, tc.want)
			}
		})
	}
}
