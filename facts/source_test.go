package facts

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// fakeSource gives facts and looks nothing up.
type fakeSource struct {
	name  string
	facts []Fact
}

func (s fakeSource) Name() string  { return s.name }
func (s fakeSource) Facts() []Fact { return s.facts }
func (fakeSource) Lookup(context.Context, Asker, Subject) *Result {
	return nil
}

func TestACatalogListsTheSourcesFactsInOrderAndFindsThemInARule(t *testing.T) {
	c := NewCatalog(
		fakeSource{"pods", []Fact{{Name: "pod_hpa"}, {Name: "pod_hpa_max", Source: "ignored"}}},
		fakeSource{"gpu", []Fact{{Name: "gpu_xid", Label: true}}},
	)
	var names []string
	for _, f := range c.Facts() {
		names = append(names, f.Source+"."+f.Name)
	}
	if got := strings.Join(names, " "); got != "pods.pod_hpa pods.pod_hpa_max gpu.gpu_xid" {
		t.Errorf("facts %s: want each of its source, in the list's order", got)
	}
	if got := c.Sources(); !slices.Equal(got, []string{"pods", "gpu"}) {
		t.Errorf("sources %v", got)
	}
	if f, ok := c.Fact("gpu_xid"); !ok || !f.Label || f.Source != "gpu" {
		t.Errorf("Fact(gpu_xid) = %+v, %v", f, ok)
	}
	if len(c.Of("gpu")) != 1 || len(c.Of("pods")) != 2 || c.Of("none") != nil {
		t.Errorf("Of: %v / %v", c.Of("gpu"), c.Of("pods"))
	}
	for _, tc := range []struct{ text, want string }{
		{`{{ .gpu_xid }} and pod_hpa_max >= 3`, "gpu pods"},
		{`pod_hpa_max >= 3 && $.gpu_xid != ""`, "pods gpu"},
		{`my_pod_hpa > 1 && pod_hpa_maximum > 2`, ""}, // names inside longer words are not facts
		{`waiting > 5`, ""},
	} {
		if got := strings.Join(c.SourcesRead(tc.text), " "); got != tc.want {
			t.Errorf("SourcesRead(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	var all []string
	for f := range c.All() {
		all = append(all, f.Name)
	}
	if got := strings.Join(all, " "); got != "pod_hpa pod_hpa_max gpu_xid" {
		t.Errorf("All: %s", got)
	}
	if k := c.Known(); k.Label("gpu_xid") != "x" || k.Number("pod_hpa") == nil || !k.Looked("gpu") || !k.Looked("pods") {
		t.Errorf("Known: %+v", k)
	}
	var none *Catalog
	for range none.All() {
		t.Error("a nil catalog yields a fact")
	}
	if none.Known() != nil {
		t.Error("a nil catalog knows facts")
	}
	if none.Facts() != nil || none.Sources() != nil || none.SourcesRead("pod_hpa") != nil {
		t.Error("a nil catalog has facts")
	}
	if _, ok := none.Fact("pod_hpa"); ok {
		t.Error("a nil catalog has a fact")
	}
}

func TestACatalogRefusesAFactNameGivenTwiceOrUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources []Source
		want    string
	}{
		{"two sources, one name", []Source{fakeSource{"a", []Fact{{Name: "x_n"}}}, fakeSource{"b", []Fact{{Name: "x_n"}}}},
			"facts: a and b both give a fact named x_n"},
		{"not a playbook name", []Source{fakeSource{"a", []Fact{{Name: "x-n"}}}},
			`facts: a gives a fact named "x-n": not a playbook name (lower-case letters, digits, _)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tc.want {
					t.Errorf("panic %v, want %q", r, tc.want)
				}
			}()
			NewCatalog(tc.sources...)
		})
	}
}
