package playbooks

import (
	"os"
	"strings"
	"testing"
)

// The runbooks' facts table is Facts(): every fact of every source, in order, with its kind and
// Doc.
func TestTheRunbooksFactsTableIsFacts(t *testing.T) {
	doc, err := os.ReadFile("../docs/playbooks/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"| fact | kind | what |", "|---|---|---|"}
	for _, f := range Facts() {
		want = append(want, "| `"+f.Name+"` | "+f.Kind()+" | "+f.Doc+" |")
	}
	if !strings.Contains(string(doc), strings.Join(want, "\n")+"\n") {
		t.Errorf("docs/playbooks/README.md lacks the facts table as playbooks.Facts says it:\n%s", strings.Join(want, "\n"))
	}
}
