package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

var durationType = reflect.TypeOf(model.Duration(0))

// badDuration finds the first duration in the document that does not parse and names its key and
// line. yaml.v3 stops at such a value with the parser's message alone (model.Duration decodes
// itself), which says neither where nor which key.
func badDuration(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			if err := badDuration(c, t, path); err != nil {
				return err
			}
		}
	case t == durationType && n.Kind == yaml.ScalarNode:
		if _, err := model.ParseDuration(n.Value); err != nil {
			return fmt.Errorf("line %d: %s: %v", n.Line, path, err)
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if f, ok := fieldByYAMLKey(t, k.Value); ok {
				if err := badDuration(v, f.Type, join(path, k.Value)); err != nil {
					return err
				}
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := badDuration(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := badDuration(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldByYAMLKey is the field of struct type t that YAML key decodes into.
func fieldByYAMLKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := fieldByYAMLKey(ft, key); ok {
					return g, true
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == key && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
