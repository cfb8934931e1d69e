package sim

import (
	"os"
	"testing"
	"time"
)

// TestPrintScenarioSignatures prints each scenario's signature over successive
// windows after switching from healthy. Run with SIM_TUNE=1 go test -run Print -v.
func TestPrintScenarioSignatures(t *testing.T) {
	if os.Getenv("SIM_TUNE") == "" {
		t.Skip("set SIM_TUNE=1 to print the scenario signatures")
	}
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
