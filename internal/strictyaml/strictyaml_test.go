package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type doc struct {
	Name    string            `yaml:"name"`
	Workers int               `yaml:"workers"`
	Ratio   float64           `yaml:"ratio"`
	On      bool              `yaml:"on"`
	Window  time.Duration     `yaml:"window"`
	Labels  map[string]string `yaml:"labels"`
	Tags    []string          `yaml:"tags"`
	Inner   inner             `yaml:"inner"`
	Kinds   []inner           `yaml:"kinds"`
	Ptr     *inner            `yaml:"ptr"`
	Common  `yaml:",inline"`
	Params  Map[float64]    `yaml:"params"`
	Query   selfish         `yaml:"query"`
	Vendor  vendor          `yaml:"vendor"`
	Raw     yaml.Node       `yaml:"raw"`
	Nested  map[string]Leaf `yaml:"nested"`
	hidden  string
}

type inner struct {
	Key   string        `yaml:"key"`
	Every time.Duration `yaml:"every"`
}

// Common is inlined: its keys are doc's own.
type Common struct {
	Shared  string `yaml:"shared"`
	Headers extra  `yaml:"headers"`
}

// extra takes any key, as prometheus/common's Headers does.
type extra struct {
	Values map[string]Leaf `yaml:",inline"`
}

type Leaf struct {
	Value string `yaml:"value"`
}

// selfish decodes itself with yaml.v3's interface, from a scalar or through Decode.
type selfish struct {
	Expr string `yaml:"expr"`
	Unit string `yaml:"unit"`
}

func (s *selfish) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		s.Expr = n.Value
		return nil
	case yaml.MappingNode:
		type plain selfish
		return Decode(n, (*plain)(s))
	}
	return errors.New("must be an expression or an object")
}

// vendor decodes itself the older way and validates itself, as prometheus/common's types do.
type vendor struct {
	Version string        `yaml:"version"`
	Timeout time.Duration `yaml:"timeout"`
	Sub     *vendorSub    `yaml:"sub"`
}

func (v *vendor) UnmarshalYAML(unmarshal func(any) error) error {
	type plain vendor
	if err := unmarshal((*plain)(v)); err != nil {
		return err
	}
	if v.Version != "" && v.Version != "v1" {
		return fmt.Errorf("unknown version %s", v.Version)
	}
	return nil
}

type vendorSub struct {
	Level tlsLevel `yaml:"level"`
}

type tlsLevel int

func (l *tlsLevel) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return err
	}
	if s != "high" {
		return fmt.Errorf("unknown level: %s", s)
	}
	*l = 2
	return nil
}

func TestEveryErrorNamesItsLineAndFullKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"an unknown key on the first line is on line 1", "nmae: x\n", []string{`line 1: unknown key "nmae"`}},
		{"blank lines and comments count", "\n# a comment\n\nname: x\ninner:\n\n  kee: y\n", []string{`line 7: unknown key "inner.kee"`}},
		{"in a list, with its index", "kinds:\n  - key: a\n  - kye: b\n", []string{`line 3: unknown key "kinds[1].kye"`}},
		{"through a pointer", "ptr: {key: a, x: 1}\n", []string{`line 1: unknown key "ptr.x"`}},
		{"an inline struct's keys are the document's", "shared: s\nsharde: s\n", []string{`line 2: unknown key "sharde"`}},
		{"an inline map takes any key, its values are checked", "headers:\n  X-Org:\n    value: a\n  X-Team: {valeu: b}\n", []string{`line 4: unknown key "headers.X-Team.valeu"`}},
		{"a map of structs", "nested:\n  a: {value: 1}\n  b: {vlaue: 2}\n", []string{`line 3: unknown key "nested.b.vlaue"`}},
		{"a type error", "workers: many\n", []string{`line 1: workers: "many" is not an integer`}},
		{"a number", "ratio: high\n", []string{`line 1: ratio: "high" is not a number`}},
		{"a bool", "on: perhaps\n", []string{`line 1: on: "perhaps" is not true or false`}},
		{"a list for a string", "name: [a]\n", []string{"line 1: name: want a string, got a list"}},
		{"a scalar for a struct", "inner: x\n", []string{`line 1: inner: want a mapping of keys, got "x"`}},
		{"a scalar for a map", "labels: none\n", []string{`line 1: labels: want a mapping, got "none"`}},
		{"a scalar for a list", "tags: a\n", []string{`line 1: tags: want a list, got "a"`}},
		{"a list for the document", "- a\n", []string{"line 1: the document: want a mapping of keys, got a list"}},
		{"a key written twice", "name: a\nworkers: 1\nname: b\n", []string{"line 3: name: written twice (first at line 1)"}},
		{"a map key written twice", "labels:\n  a: x\n  a: y\n", []string{"line 3: labels.a: written twice (first at line 2)"}},
		{"every error at once, in the order of the lines", "workers: many\nnmae: x\ninner: {every: soon}\ntags: a\n", []string{
			`line 1: workers: "many" is not an integer`,
			`line 2: unknown key "nmae"`,
			`line 3: inner.every: not a valid duration string: "soon"`,
			`line 4: tags: want a list, got "a"`,
		}},
		{"a value that decodes itself: its own error at its key", "query: [a]\n", []string{"line 1: query: must be an expression or an object"}},
		{"a value that decodes itself through Decode: its errors under its key", "query:\n  expr: up\n  unti: s\n", []string{`line 3: unknown key "query.unti"`}},
		{"an ordered map's values", "params:\n  a: 1\n  b: high\n", []string{`line 3: params.b: "high" is not a number`}},
		{"an ordered map is a mapping", "params: [a]\n", []string{"line 1: params: want a mapping, got a list"}},
		{"a vendor type: an unknown key named before it decodes", "vendor:\n  version: v1\n  verison: v2\n", []string{`line 3: unknown key "vendor.verison"`}},
		{"a vendor type: a wrong type named", "vendor:\n  sub: {level: [a]}\n", []string{"line 2: vendor.sub.level: cannot unmarshal !!seq"}},
		{"a vendor type: a mapping for its struct", "vendor: {sub: [high]}\n", []string{"line 1: vendor.sub: want a mapping of keys, got a list"}},
		{"a vendor type: a scalar it refuses", "vendor:\n  sub: {level: low}\n", []string{"line 2: vendor.sub.level: unknown level: low"}},
		{"a vendor type: its own validation", "\nvendor: {version: v2}\n", []string{"line 2: vendor: unknown version v2"}},
		{"a vendor type reads its durations its own way", "vendor: {timeout: 1d}\n", []string{`line 1: vendor.timeout: "1d" is not a duration`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := Unmarshal([]byte(tc.yaml), &d)
			want := strings.Join(tc.want, "\n")
			if err == nil || err.Error() != want {
				t.Fatalf("error\n  %v\nwant\n  %s", err, strings.ReplaceAll(want, "\n", "\n  "))
			}
			var list Errors
			if !errors.As(err, &list) || len(list) != len(tc.want) {
				t.Fatalf("want %d errors in an Errors, got %#v", len(tc.want), err)
			}
		})
	}
}

func TestDecodeFillsEveryKindOfValue(t *testing.T) {
	src := `
name: n
workers: 3
ratio: 0.5
on: true
window: 1h30m
labels: {b: "2", a: "1"}
tags: [x, y]
inner: {key: k, every: 1d}
kinds: [{key: a}, {key: b, every: 0}]
ptr: {key: p}
shared: s
headers: {X-Org: {value: o}}
params: {z: 1, a: 2, m: 3}
query: up
vendor: {version: v1, timeout: 5s, sub: {level: high}}
raw: {anything: [goes]}
nested: {a: {value: v}}
`
	var d doc
	if err := Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	want := doc{
		Name: "n", Workers: 3, Ratio: 0.5, On: true, Window: 90 * time.Minute,
		Labels: map[string]string{"a": "1", "b": "2"}, Tags: []string{"x", "y"},
		Inner: inner{Key: "k", Every: 24 * time.Hour}, Kinds: []inner{{Key: "a"}, {Key: "b"}}, Ptr: &inner{Key: "p"},
		Common: Common{Shared: "s", Headers: extra{Values: map[string]Leaf{"X-Org": {Value: "o"}}}},
		Params: Map[float64]{{Key: "z", Line: 14, Value: 1}, {Key: "a", Line: 14, Value: 2}, {Key: "m", Line: 14, Value: 3}},
		Query:  selfish{Expr: "up"}, Vendor: vendor{Version: "v1", Timeout: 5 * time.Second, Sub: &vendorSub{Level: 2}},
		Nested: map[string]Leaf{"a": {Value: "v"}},
	}
	got := d
	got.Raw = yaml.Node{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if d.Raw.Kind != yaml.MappingNode || d.Raw.Line != 17 {
		t.Fatalf("a yaml.Node field gets the node as written: %+v", d.Raw)
	}
}

// An ordered map keeps the written order, each key's line, and a key written twice (its
// caller says what that means).
func TestMapKeepsItsOrderAndLines(t *testing.T) {
	var m struct {
		Q Map[string] `yaml:"q"`
	}
	if err := Unmarshal([]byte("q:\n  zeta: 1\n  alpha: 2\n\n  zeta: 3\n"), &m); err != nil {
		t.Fatal(err)
	}
	want := Map[string]{{Key: "zeta", Line: 2, Value: "1"}, {Key: "alpha", Line: 3, Value: "2"}, {Key: "zeta", Line: 5, Value: "3"}}
	if !reflect.DeepEqual(m.Q, want) {
		t.Fatalf("got %+v, want %+v", m.Q, want)
	}
}

// Defaults stay where the document says nothing, as yaml.v3 keeps them; null empties only
// pointers, maps, lists; a list is replaced, a map added to.
func TestDefaultsStayWhereTheDocumentSaysNothing(t *testing.T) {
	d := doc{Name: "default", Workers: 4, Window: time.Minute, Inner: inner{Key: "k", Every: time.Second},
		Labels: map[string]string{"keep": "1"}, Tags: []string{"old"}, Ptr: &inner{Key: "p"}}
	if err := Unmarshal([]byte("workers:\ninner: {key: new}\nlabels: {add: '2'}\ntags: [new]\nptr: ~\n"), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "default" || d.Workers != 4 || d.Window != time.Minute || d.Inner != (inner{Key: "new", Every: time.Second}) {
		t.Fatalf("a default was lost: %+v", d)
	}
	if !reflect.DeepEqual(d.Labels, map[string]string{"keep": "1", "add": "2"}) || !reflect.DeepEqual(d.Tags, []string{"new"}) || d.Ptr != nil {
		t.Fatalf("labels %v tags %v ptr %v", d.Labels, d.Tags, d.Ptr)
	}
}

func TestDurationsAreWrittenThePrometheusWay(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "90s": 90 * time.Second, "1h30m": 90 * time.Minute, "1d": 24 * time.Hour, "2w": 14 * 24 * time.Hour, "500ms": 500 * time.Millisecond} {
		var d doc
		if err := Unmarshal([]byte("window: "+in+"\n"), &d); err != nil || d.Window != want {
			t.Errorf("window: %s decoded to %v (%v), want %v", in, d.Window, err, want)
		}
	}
	for in, want := range map[string]string{
		"1.5s": `line 1: window: unknown unit "." in duration "1.5s"`,
		"-5m":  `line 1: window: not a valid duration string: "-5m"`,
		"5x":   `line 1: window: unknown unit "x" in duration "5x"`,
		"{}":   "line 1: window: want a duration, got a mapping",
	} {
		var d doc
		if err := Unmarshal([]byte("window: "+in+"\n"), &d); err == nil || err.Error() != want {
			t.Errorf("window: %s gave %v, want %s", in, err, want)
		}
	}
}

// Marshal writes durations as Decode reads them, and what it writes decodes to the same value;
// a vendor type's durations stay in its own syntax.
func TestMarshalWritesDurationsBackInTheirSyntax(t *testing.T) {
	in := doc{Window: 7 * 24 * time.Hour, Inner: inner{Every: 90 * time.Second}, Kinds: []inner{{Every: 36 * time.Hour}},
		Vendor: vendor{Timeout: 24 * time.Hour}, Labels: map[string]string{}}
	b, err := Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"window: 1w\n", "every: 1m30s\n", "every: 1d12h\n", "timeout: 24h0m0s\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in\n%s", want, b)
		}
	}
	var out doc
	if err := Unmarshal(b, &out); err != nil {
		t.Fatalf("what Marshal wrote does not decode: %v\n%s", err, b)
	}
	if out.Window != in.Window || out.Inner != in.Inner || !reflect.DeepEqual(out.Kinds, in.Kinds) || out.Vendor.Timeout != in.Vendor.Timeout {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
}

func TestAnEmptyDocumentIsErrEmpty(t *testing.T) {
	for _, src := range []string{"", "\n\n", "# only a comment\n  \n# and another\n", "---\n"} {
		var d doc
		if err := Unmarshal([]byte(src), &d); !errors.Is(err, ErrEmpty) {
			t.Errorf("%q: got %v, want ErrEmpty", src, err)
		}
	}
	var d doc
	if err := Unmarshal([]byte("# an empty mapping is not empty\n{}\n"), &d); err != nil {
		t.Fatalf("{}: %v", err)
	}
}

func TestASyntaxErrorNamesItsLine(t *testing.T) {
	var d doc
	err := Unmarshal([]byte("# c\nname: x\ninner\n  key: y\n"), &d)
	if err == nil || err.Error() != "line 3: could not find expected ':'" {
		t.Fatalf("got %v", err)
	}
}

// A few anchors can stand for billions of values: refused, and quickly. An alias inside its own
// anchor is an error, not a loop.
func TestAliasesCannotExplode(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	prev := "a"
	for i := range 8 {
		name := fmt.Sprintf("l%d", i)
		fmt.Fprintf(&b, "%s: &%s [%s]\n", name, name, strings.Repeat("*"+prev+", ", 9)+"*"+prev)
		prev = name
	}
	fmt.Fprintf(&b, "x: *%s\n", prev)
	var v struct {
		A []string                 `yaml:"a"`
		X [][][][][][][][][]string `yaml:"x"`
	}
	n, err := Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	n.Content = append(n.Content[:2], n.Content[len(n.Content)-2:]...) // a and x: the anchors stay
	err = Decode(n, &v)
	if err == nil || err.Error() != "line 10: x: its aliases stand for more than 100000 values" {
		t.Fatalf("got %v", err)
	}

	var self struct {
		Tags []string `yaml:"tags"`
	}
	if err := Unmarshal([]byte("tags: &t [a, *t]\n"), &self); err == nil {
		t.Fatal("an alias inside its own anchor decoded")
	}
}

func TestEachScalarGivesTheTypeEachValueDecodesInto(t *testing.T) {
	n, err := Parse([]byte("name: a\nworkers: 1\nunknown: u\ninner: {every: 1d}\nshared: s\nheaders: {X: {value: v}}\nparams: {p: 1}\ntags: [t]\nvendor: {version: v1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	EachScalar(n, reflect.TypeOf(doc{}), func(n *yaml.Node, t reflect.Type) {
		name := "<nil>"
		if t != nil {
			name = t.String()
		}
		got[n.Value] = name
	})
	want := map[string]string{"a": "string", "1": "float64", "u": "<nil>", "1d": "time.Duration", "s": "string", "v": "string",
		"t": "string", "v1": "string"}
	// "1" is workers' (int) and p's (float64): the later wins in this map, so check workers alone.
	delete(got, "1")
	delete(want, "1")
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
