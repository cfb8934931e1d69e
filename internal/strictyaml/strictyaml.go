// Package strictyaml is the one YAML loader of the responder's configuration and playbooks. It
// decodes the parsed document itself, never a re-encoded copy, so every error names the line as
// written (lines start at 1, blank lines and comments counted) and the full key:
//
//	line 7: unknown key "prometheus.urll"
//	line 4: dispatch.workers: "many" is not an integer
//	line 5: dispatch.dedup_window: not a valid duration string: "soon"
//
// Unknown keys are errors, as is a key written twice in one mapping. A time.Duration is written
// as Prometheus writes durations (90s, 1h30m, 1d, 1w, 0: model.ParseDuration), and Marshal
// writes it back so. Map keeps a mapping's entries in the order they are written. Decode reports
// every error of a document, in the order of its lines (Errors).
//
// Values that decode themselves are left to their own code: a type with yaml.v3's UnmarshalYAML
// is called with its node (it may call Decode on it: its errors are placed under its key); a
// type with the older UnmarshalYAML(func(any) error) (prometheus/common's HTTP client
// configuration) is first walked field by field, so that an unknown key or a wrong type is named
// as everywhere else, then decoded by yaml.v3 and its own validation.
package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// ErrEmpty is what Parse says of a document with nothing in it but comments and whitespace. The
// caller says what that means for its file.
var ErrEmpty = errors.New("the file is empty (nothing but comments or whitespace)")

// Error is one error of a document, at its line.
type Error struct {
	// Line is the line in the document as written, from 1.
	Line int
	// Key is the full key of the value ("dispatch.workers", "profile.kinds[0].match"); empty:
	// the document as a whole.
	Key string
	// Msg says what is wrong with the value; empty when the key itself is unknown.
	Msg string
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("line %d: unknown key %q", e.Line, e.Key)
	}
	key := e.Key
	if key == "" {
		key = "the document"
	}
	return fmt.Sprintf("line %d: %s: %s", e.Line, key, e.Msg)
}

// Errors are every error of one document, in the order of its lines: one a line.
type Errors []*Error

func (l Errors) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the single errors, as errors.Join's do.
func (l Errors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Parse parses one YAML document (the first, when there are several) and returns its root node.
// A document with nothing in it is ErrEmpty; a syntax error reads "line N: ...".
func Parse(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, ErrEmpty
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" && root.Value == "" {
		return nil, ErrEmpty // a lone "---"
	}
	return root, nil
}

// Unmarshal parses data and decodes it into v (a pointer) strictly: Parse, then Decode.
func Unmarshal(data []byte, v any) error {
	n, err := Parse(data)
	if err != nil {
		return err
	}
	return Decode(n, v)
}

// Decode decodes node n into v, which must be a non-nil pointer, strictly. What v holds before
// is kept where the document says nothing (defaults), as yaml.v3 does: a struct's absent keys
// and a map's other entries stay, a list is replaced, and an empty value (null) leaves a
// struct, a number or a string as it was and empties a pointer, map or list. The error, if any,
// is Errors.
func Decode(n *yaml.Node, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictyaml: Decode needs a non-nil pointer, got %T", v)
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return ErrEmpty
		}
		n = n.Content[0]
	}
	d := &decoder{}
	d.decode(n, rv.Elem(), "", false)
	if len(d.errs) > 0 {
		return d.errs
	}
	return nil
}

type decoder struct {
	errs Errors
	// expanding are the aliases being decoded (one that holds itself is an error), aliased how
	// many values were decoded through an alias: a few short anchors can stand for billions of
	// values, and past maxAliased the document is refused, as yaml.v3 refuses it.
	expanding map[*yaml.Node]bool
	aliased   int
	// outer is the outermost alias being decoded, and its key: where a refusal is reported.
	outer     *yaml.Node
	outerPath string
}

const maxAliased = 100_000

func (d *decoder) add(n *yaml.Node, key, format string, args ...any) {
	d.errs = append(d.errs, &Error{Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

var (
	nodeType     = reflect.TypeOf(yaml.Node{})
	durationType = reflect.TypeOf(time.Duration(0))
)

// obsoleteUnmarshaler is yaml.v2's interface, which yaml.v3 still honours and prometheus/common's
// types implement.
type obsoleteUnmarshaler interface {
	UnmarshalYAML(unmarshal func(any) error) error
}

// selfDecoder is a type of this package that decodes itself (Map).
type selfDecoder interface {
	decodeStrict(d *decoder, n *yaml.Node, path string, foreign bool)
}

// decode decodes n into v at path. foreign: n is part of a value another package decodes itself
// (see foreign); its durations are left to that package's syntax.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if n.Kind == yaml.AliasNode {
		d.alias(n, v, path, foreign)
		return
	}
	if d.aliased >= maxAliased {
		return
	}
	if len(d.expanding) > 0 {
		if d.aliased++; d.aliased == maxAliased {
			d.add(d.outer, d.outerPath, "its aliases stand for more than %d values", maxAliased)
			return
		}
	}
	if v.Type() == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path, foreign)
		return
	}
	if v.CanAddr() {
		switch u := v.Addr().Interface().(type) {
		case selfDecoder:
			u.decodeStrict(d, n, path, foreign)
			return
		case yaml.Unmarshaler:
			d.place(n, path, u.UnmarshalYAML(n))
			return
		case obsoleteUnmarshaler:
			d.foreign(n, v, path)
			return
		}
	}
	d.plain(n, v, path, foreign)
}

// alias decodes the value alias n stands for.
func (d *decoder) alias(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if n.Alias == nil || d.expanding[n] {
		d.add(n, path, "alias *%s holds itself", n.Value)
		return
	}
	if d.expanding == nil {
		d.expanding = map[*yaml.Node]bool{}
	}
	if len(d.expanding) == 0 {
		d.outer, d.outerPath = n, path
	}
	d.expanding[n] = true
	d.decode(n.Alias, v, path, foreign)
	delete(d.expanding, n)
}

// plain decodes n into v by v's kind, without v's own unmarshaler.
func (d *decoder) plain(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if v.Type() == durationType && !foreign {
		d.duration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(n, v, path, foreign)
	case reflect.Map:
		d.mapping(n, v, path, foreign)
	case reflect.Slice:
		d.sequence(n, v, path, foreign)
	case reflect.Interface:
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.add(n, path, "%s", cleanErr(err))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			d.add(n, path, "want %s, got %s", typeName(v.Type()), kindName(n))
			return
		}
		p := reflect.New(v.Type())
		if err := n.Decode(p.Interface()); err != nil {
			d.add(n, path, "%q is not %s", n.Value, typeName(v.Type()))
			return
		}
		v.Set(p.Elem())
	}
}

// duration reads a duration as Prometheus does (model.ParseDuration: 90s, 1h30m, 1d, 1w, 0).
func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.add(n, path, "want a duration, got %s", kindName(n))
		return
	}
	dur, err := model.ParseDuration(n.Value)
	if err != nil {
		d.add(n, path, "%v", err)
		return
	}
	v.SetInt(int64(dur))
}

// foreign decodes a value of a type that decodes itself the older way (prometheus/common's
// TLSConfig, OAuth2, Secret, URL, TLSVersion). A scalar is handed to it. A mapping or a list for
// a struct, map or list type is first walked into a scratch value by its fields, so that an unknown key or a wrong type is
// named with its line and full key; only then does the type decode and validate it, and its own
// error is placed at the value's line and key.
func (d *decoder) foreign(n *yaml.Node, v reflect.Value, path string) {
	k := v.Kind()
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && (k == reflect.Struct || k == reflect.Map || k == reflect.Slice) {
		before := len(d.errs)
		d.plain(n, reflect.New(v.Type()).Elem(), path, true)
		if len(d.errs) > before {
			return
		}
	}
	if err := n.Decode(v.Addr().Interface()); err != nil {
		d.add(n, path, "%s", cleanErr(err))
	}
}

// place puts the error an UnmarshalYAML returned under path: this package's errors (it called
// Decode) keep their lines and get path before their keys; any other is the value's own.
func (d *decoder) place(n *yaml.Node, path string, err error) {
	for _, e := range flatten(err) {
		if se, ok := e.(*Error); ok {
			d.errs = append(d.errs, &Error{Line: se.Line, Key: join(path, se.Key), Msg: se.Msg})
			continue
		}
		d.add(n, path, "%v", e)
	}
}

// flatten returns the single errors err joins (Errors, errors.Join), in order.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "want a mapping of keys, got %s", kindName(n))
		return
	}
	info := fieldsOf(v.Type())
	d.entries(n, path, func(k, val *yaml.Node, key string) {
		switch index, ok := info.fields[k.Value]; {
		case ok:
			d.decode(val, fieldAt(v, index), key, foreign)
		case info.inlineMap != nil:
			d.entry(fieldAt(v, info.inlineMap), k, val, key, foreign)
		default:
			d.errs = append(d.errs, &Error{Line: k.Line, Key: key})
		}
	})
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "want a mapping, got %s", kindName(n))
		return
	}
	d.entries(n, path, func(k, val *yaml.Node, key string) { d.entry(v, k, val, key, foreign) })
}

// entries calls fn with every key of mapping n, its value and its full key; a key written twice
// is an error, not a second call.
func (d *decoder) entries(n *yaml.Node, path string, fn func(k, val *yaml.Node, key string)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		if first, ok := seen[k.Value]; ok {
			d.add(k, key, "written twice (first at line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		fn(k, val, key)
	}
}

// entry decodes key k and value val into map m (made when nil), a new element each (as yaml.v3
// does), set only when both decode.
func (d *decoder) entry(m reflect.Value, k, val *yaml.Node, key string, foreign bool) {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	before := len(d.errs)
	kv := reflect.New(m.Type().Key()).Elem()
	d.decode(k, kv, key, foreign)
	elem := reflect.New(m.Type().Elem()).Elem()
	d.decode(val, elem, key, foreign)
	if len(d.errs) == before {
		m.SetMapIndex(kv, elem)
	}
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string, foreign bool) {
	if n.Kind != yaml.SequenceNode {
		d.add(n, path, "want a list, got %s", kindName(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		d.decode(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i), foreign)
	}
	v.Set(s)
}

// Map is a mapping that keeps its entries in the order they are written (a playbook's queries
// are listed as their author wrote them). A key written twice is kept twice: the caller knows
// what that means.
type Map[V any] []Entry[V]

// Entry is one key of a Map, its line and its value.
type Entry[V any] struct {
	Key   string
	Line  int
	Value V
}

// MarshalYAML writes the entries as a mapping, in their order.
func (m Map[V]) MarshalYAML() (any, error) {
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range m {
		var v yaml.Node
		if err := v.Encode(e.Value); err != nil {
			return nil, err
		}
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.Key}, &v)
	}
	return out, nil
}

func (m *Map[V]) decodeStrict(d *decoder, n *yaml.Node, path string, foreign bool) {
	if n.Kind != yaml.MappingNode {
		d.add(n, path, "want a mapping, got %s", kindName(n))
		return
	}
	out := make(Map[V], 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		e := Entry[V]{Key: k.Value, Line: k.Line}
		d.decode(val, reflect.ValueOf(&e.Value).Elem(), join(path, k.Value), foreign)
		out = append(out, e)
	}
	*m = out
}

// structInfo is where each key of a struct type goes: the index path of its field (through
// inline structs), and the map of an inline map field that takes every other key.
type structInfo struct {
	fields    map[string][]int
	inlineMap []int
}

// fieldsOf reads struct type t's yaml tags as yaml.v3 does: the tag's name or the field's
// lower-cased, "-" skipped, unexported fields skipped, ",inline" structs' keys taken as t's own.
func fieldsOf(t reflect.Type) structInfo {
	info := structInfo{fields: map[string][]int{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				sub := fieldsOf(ft)
				for k, index := range sub.fields {
					info.fields[k] = append([]int{i}, index...)
				}
				if sub.inlineMap != nil {
					info.inlineMap = append([]int{i}, sub.inlineMap...)
				}
			case reflect.Map:
				info.inlineMap = []int{i}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		info.fields[name] = []int{i}
	}
	return info
}

// EachScalar calls fn with every scalar of the document n and the type it decodes into as part
// of a value of type t: through pointers, struct fields (inline ones included), map, Map and
// list values, and the fields of values that decode themselves. The type is nil where nothing
// takes the scalar (under an unknown key). What fn changes in a node, Decode then reads: the
// configuration expands ${VAR} so.
func EachScalar(n *yaml.Node, t reflect.Type, fn func(n *yaml.Node, t reflect.Type)) {
	walk(n, t, false, func(n *yaml.Node, t reflect.Type, _ bool) { fn(n, t) })
}

// walk is EachScalar, telling fn too whether the scalar is inside a value that decodes itself
// (foreign: yaml.v3 decodes it, in yaml.v3's syntax).
func walk(n *yaml.Node, t reflect.Type, foreign bool, fn func(n *yaml.Node, t reflect.Type, foreign bool)) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t != nodeType && reflect.PointerTo(t).Implements(reflect.TypeFor[obsoleteUnmarshaler]()) {
		foreign = true
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, t, foreign, fn)
		}
	case yaml.ScalarNode:
		fn(n, t, foreign)
	case yaml.SequenceNode:
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		for _, c := range n.Content {
			walk(c, elem, foreign, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walk(n.Content[i+1], valueType(t, n.Content[i].Value), foreign, fn)
		}
	}
}

// valueType is the type the value of key decodes into in a mapping decoded into type t, nil
// when none.
func valueType(t reflect.Type, key string) reflect.Type {
	switch {
	case t == nil || t == nodeType:
		return nil
	case reflect.PointerTo(t).Implements(selfDecoderType):
		return reflect.New(t).Interface().(interface{ valueType() reflect.Type }).valueType()
	case t.Kind() == reflect.Map:
		return t.Elem()
	case t.Kind() != reflect.Struct:
		return nil
	}
	info := fieldsOf(t)
	if index, ok := info.fields[key]; ok {
		return t.FieldByIndex(index).Type
	}
	if info.inlineMap != nil {
		return t.FieldByIndex(info.inlineMap).Type.Elem()
	}
	return nil
}

func (m *Map[V]) valueType() reflect.Type { return reflect.TypeFor[V]() }

var selfDecoderType = reflect.TypeFor[selfDecoder]()

// fieldAt is v's field at index, through inline pointers (allocated when nil).
func fieldAt(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

func join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	case strings.HasPrefix(key, "["):
		return path + key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

func typeName(t reflect.Type) string {
	if t == durationType {
		return "a duration"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	default:
		return "a " + t.Kind().String()
	}
}

var (
	fieldNotFoundRE = regexp.MustCompile(`field (\S+) not found in type \S+`)
	intoTypeRE      = regexp.MustCompile(` into \S+`)
	lineRE          = regexp.MustCompile(`^line \d+: `)
)

// cleanErr turns yaml.v3's words for an error of a value that decodes itself into a reader's:
// no Go type names, no line (the Error has it).
func cleanErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = fieldNotFoundRE.ReplaceAllString(msg, `unknown key "$1"`)
	msg = intoTypeRE.ReplaceAllString(msg, "")
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = lineRE.ReplaceAllString(strings.TrimSpace(l), "")
	}
	return strings.Join(lines, "; ")
}
