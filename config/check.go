package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// checkNode walks the document against the type it decodes into, before it is decoded, and
// returns the first problem with its line in the file as written and its key: an unknown key, a
// value of the wrong type, a duration that does not parse. (yaml.v3 alone says neither which
// key a type error is at, nor, once a document is re-encoded, on which line.) It rewrites each
// duration into the syntax the decoder reads (see parseDuration).
func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := checkNode(c, t, path); err != nil {
				return err
			}
		}
		return nil
	case yaml.AliasNode:
		return nil // the decoder resolves it
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // an empty value keeps the default
	}
	if t == durationType {
		return parseDuration(n, path)
	}
	if t.PkgPath() != "" && !strings.HasPrefix(t.PkgPath(), "github.com/vllm-responder/") {
		// Another module's type (prometheus/common's HTTP client config) has its own decoder:
		// its keys are checked here, so an unknown one is named as everywhere else, then this
		// part is decoded strictly on its own for the rest.
		if err := foreignKeys(n, t, path); err != nil {
			return err
		}
		b, err := yaml.Marshal(n)
		if err != nil {
			return fmt.Errorf("line %d: %s: %w", n.Line, where(path), err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(reflect.New(t).Interface()); err != nil {
			return fmt.Errorf("line %d: %s: %s", n.Line, where(path), cleanErr(err))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s: want a mapping of keys, got %s", n.Line, where(path), kindName(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByYAMLKey(t, k.Value)
			if !ok {
				return fmt.Errorf("line %d: unknown key %q", k.Line, join(path, k.Value))
			}
			if err := checkNode(v, f.Type, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s: want a mapping, got %s", n.Line, where(path), kindName(n))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkNode(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("line %d: %s: want a list, got %s", n.Line, where(path), kindName(n))
		}
		for i, c := range n.Content {
			if err := checkNode(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Interface:
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want %s, got %s", n.Line, where(path), typeName(t), kindName(n))
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return fmt.Errorf("line %d: %s: %q is not %s", n.Line, where(path), n.Value, typeName(t))
		}
	}
	return nil
}

// foreignKeys finds an unknown key in a part of another module's type by the yaml tags of its
// fields (a struct with an inline map takes any key), and a scalar its field refuses, each with
// its line and full key.
func foreignKeys(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := foreignField(t, k.Value)
			if !ok {
				return fmt.Errorf("line %d: unknown key %q", k.Line, join(path, k.Value))
			}
			if err := foreignKeys(v, ft, join(path, k.Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.MappingNode && t.Kind() == reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := foreignKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := foreignKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case n.Kind == yaml.ScalarNode && n.Tag != "!!null":
		err := n.Decode(reflect.New(t).Interface())
		switch {
		case err == nil:
		case reflect.PointerTo(t).Implements(unmarshalerType):
			return fmt.Errorf("line %d: %s: %s", n.Line, where(path), cleanErr(err))
		case t.Kind() == reflect.Struct:
			return fmt.Errorf("line %d: %s: want a mapping of keys, got %s", n.Line, where(path), kindName(n))
		case t.Kind() == reflect.Map:
			return fmt.Errorf("line %d: %s: want a mapping, got %s", n.Line, where(path), kindName(n))
		case t.Kind() == reflect.Slice:
			return fmt.Errorf("line %d: %s: want a list, got %s", n.Line, where(path), kindName(n))
		default:
			return fmt.Errorf("line %d: %s: %q is not %s", n.Line, where(path), n.Value, typeName(t))
		}
	}
	return nil
}

// unmarshalerType is what a type that decodes itself implements (yaml.v3's obsolete interface,
// which prometheus/common's types use).
var unmarshalerType = reflect.TypeOf((*interface{ UnmarshalYAML(func(any) error) error })(nil)).Elem()

// foreignField is the type key decodes into in struct type t: a field's, or the values' of an
// inline map.
func foreignField(t reflect.Type, key string) (reflect.Type, bool) {
	if f, ok := fieldByYAMLKey(t, key); ok {
		return f.Type, true
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, opts, _ := strings.Cut(f.Tag.Get("yaml"), ","); strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Map {
			return f.Type.Elem(), true
		}
	}
	return nil, false
}

func where(path string) string {
	if path == "" {
		return "the document"
	}
	return path
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
