// Package golden pins rendered output (Block Kit messages, Adaptive Cards, notification views)
// in golden files under a test package's testdata, rewritten with `go test -update` and reviewed
// in the diff. Only tests import it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata (review the diff)")

// Updating reports whether this run rewrites the golden files (-update).
func Updating() bool { return *update }

// Check compares got with testdata/name, or writes it there when updating.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from what was rendered (run go test -update and review the diff):\n%s", path, got)
	}
}
