package sources

import (
	"os"
	"strings"
	"testing"
)

// The runbooks' facts table is Catalog(): every fact of every source, in order, with its kind
// and Doc.
func TestTheRunbooksFactsTableIsTheCatalog(t *testing.T) {
	doc, err := os.ReadFile("../../docs/playbooks/README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"| fact | kind | what |", "|---|---|---|"}
	for _, f := range Catalog().Facts() {
		want = append(want, "| `"+f.Name+"` | "+f.Kind()+" | "+f.Doc+" |")
	}
	if !strings.Contains(string(doc), strings.Join(want, "\n")+"\n") {
		t.Errorf("docs/playbooks/README.md lacks the facts table as the catalog says it:\n%s", strings.Join(want, "\n"))
	}
}

// The catalog and the engine's list are one list: the same sources in the same order, whatever
// the config.
func TestTheCatalogIsTheList(t *testing.T) {
	var names []string
	for _, s := range List(Config{}) {
		names = append(names, s.Name())
	}
	if got := Catalog().Sources(); strings.Join(got, ",") != strings.Join(names, ",") || len(got) == 0 {
		t.Errorf("catalog sources %v, list %v", got, names)
	}
	for _, f := range Catalog().Facts() {
		if f.Title == "" || f.Doc == "" || f.Source == "" {
			t.Errorf("fact %s lacks a title, doc or source: %+v", f.Name, f)
		}
	}
}
