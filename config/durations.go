package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
)

// Every duration of the configuration is a time.Duration once loaded. The file writes it in
// Prometheus' syntax (90s, 1h30m, 1d, 1w, or 0), as it always has: parseDuration reads that and
// formatDurations writes it back.
var durationType = reflect.TypeOf(time.Duration(0))

// parseDuration reads the duration at node n, naming its key and line when it does not parse
// (yaml.v3 alone would say neither), and rewrites the node in Go's syntax, which the decoder
// then reads into the field.
func parseDuration(n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %s: want a duration, got %s", n.Line, where(path), kindName(n))
	}
	d, err := model.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %s: %v", n.Line, where(path), err)
	}
	n.Value, n.Tag, n.Style = time.Duration(d).String(), "!!str", 0
	return nil
}

// formatDurations rewrites every duration of the encoded value of type t from Go's syntax
// (168h0m0s) back into the file's (1w), so that what `responder check` prints reads as the file
// does and loads again.
func formatDurations(n *yaml.Node, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.DocumentNode:
		for _, c := range n.Content {
			formatDurations(c, t)
		}
	case t == durationType && n.Kind == yaml.ScalarNode:
		if d, err := time.ParseDuration(n.Value); err == nil {
			n.Value = configerr.FormatDuration(d)
		}
	case t.PkgPath() != "" && !strings.HasPrefix(t.PkgPath(), "github.com/vllm-responder/"):
		// Another module's type writes its own durations.
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := fieldByYAMLKey(t, n.Content[i].Value); ok {
				formatDurations(n.Content[i+1], f.Type)
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			formatDurations(n.Content[i+1], t.Elem())
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			formatDurations(c, t.Elem())
		}
	}
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
