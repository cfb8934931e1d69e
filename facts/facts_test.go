package facts

import (
	"reflect"
	"strings"
	"testing"
)

var sample = []Fact{
	{Name: "a_count", Source: "one"},
	{Name: "a_name", Label: true, Source: "one"},
	{Name: "b_count", Source: "two"},
}

func TestRecordedFactsReadBackMergeAndSayWhatWasLookedUp(t *testing.T) {
	f := New("one")
	if err := f.From(sample, map[string]any{"a_count": 3, "a_name": "x"}); err != nil {
		t.Fatal(err)
	}
	g := New("two")
	if err := g.From(sample, map[string]any{"b_count": 0.5}); err != nil {
		t.Fatal(err)
	}
	f.Merge(g)
	f.Merge(nil)
	if !f.Looked("one") || !f.Looked("two") || f.Looked("three") || (*Facts)(nil).Looked("one") {
		t.Errorf("sources %v", f.Sources)
	}
	if want := map[string]any{"a_count": 3.0, "a_name": "x", "b_count": 0.5}; !reflect.DeepEqual(f.Map(), want) {
		t.Errorf("map %v, want %v", f.Map(), want)
	}
	if (*Facts)(nil).Number("a_count") != nil || (*Facts)(nil).Label("a_name") != "" || (*Facts)(nil).Map() != nil {
		t.Error("nil facts know something")
	}
}

func TestRecordedFactsOfTheWrongKindOrNameAreRefused(t *testing.T) {
	err := New().From(sample, map[string]any{"a_count": "three", "a_name": 4, "c": 1, "b_count": []int{1}})
	for _, want := range []string{`a_count: a number, not "three"`, "a_name: a label value (a string), not 4",
		"c: no such fact (one of a_count, a_name, b_count)", "b_count: a number or a string, not []int"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}
