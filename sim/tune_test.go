//go:build tune

// A tuning aid, not a test: built only with -tags tune, so plain `go test` never has it to skip.

package sim

import (
	"testing"
	"time"
)

// TestPrintScenarioSignatures prints each scenario's signature over successive
// windows after switching from healthy. Run with go test -tags tune -run Print -v ./sim.
func TestPrintScenarioSignatures(t *testing.T) {
	for _, name := range []string{"healthy", "overload", "kv-pressure", "long-prompts", "wide-batch", "client-timeouts"} {
		v := newVirtual(t, DefaultConfig(), "healthy")
		v.run(30 * time.Second)
		v.switchTo(name)
		prev := v.snap()
		for _, upto := range []time.Duration{15, 30, 45, 60, 90, 120, 180} {
			v.run(upto*time.Second - v.now.Sub(prev.at) - (prev.at.Sub(epoch) - 30*time.Second))
			cur := v.snap()
			t.Logf("%-16s t=%3.0fs %s", name, cur.at.Sub(epoch).Seconds()-30, window{prev, cur}.signature())
			prev = cur
		}
	}
}
