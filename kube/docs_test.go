package kube

import (
	"os"
	"strings"
	"testing"
)

// The runbooks' facts table is this package's: every fact, in order, with its kind and Doc.
func TestTheRunbooksFactsTableIsNames(t *testing.T) {
	doc, err := os.ReadFile("../docs/playbooks/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"| fact | kind | what |", "|---|---|---|"}
	for _, f := range Names() {
		want = append(want, "| `"+f.Name+"` | "+f.kind()+" | "+f.Doc+" |")
	}
	if !strings.Contains(string(doc), strings.Join(want, "\n")+"\n") {
		t.Errorf("docs/playbooks/README.md lacks the facts table as kube.Names says it:\n%s", strings.Join(want, "\n"))
	}
}
