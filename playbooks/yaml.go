package playbooks

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// orderedQueries keeps the queries in the order they are written: evidence is listed that way.
type orderedQueries []namedQuery

type namedQuery struct {
	Name  string
	Query QueryFile
	Line  int
}

// UnmarshalYAML accepts `name: promql` and `name: {expr: ..., unit: ...}`.
func (o *orderedQueries) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: queries must be a mapping of name to PromQL", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		nq := namedQuery{Name: k.Value, Line: k.Line}
		switch v.Kind {
		case yaml.ScalarNode:
			nq.Query.Expr = v.Value
		case yaml.MappingNode:
			if err := decodeStrict(v, &nq.Query); err != nil {
				return fmt.Errorf("queries.%s: %w", k.Value, err)
			}
		default:
			return fmt.Errorf("line %d: queries.%s: must be a PromQL string or an object with expr", v.Line, k.Value)
		}
		*o = append(*o, nq)
	}
	return nil
}

// orderedFloats is a name -> number mapping that keeps its order.
type orderedFloats []namedFloat

type namedFloat struct {
	Name  string
	Value float64
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (o *orderedFloats) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: params must be a mapping of name to number", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var f float64
		if err := v.Decode(&f); err != nil {
			return fmt.Errorf("line %d: params.%s: %q is not a number", v.Line, k.Value, v.Value)
		}
		*o = append(*o, namedFloat{Name: k.Value, Value: f})
	}
	return nil
}

// decodeStrict decodes a node with unknown keys as errors. yaml.v3 does not carry KnownFields
// into custom unmarshalers, so the node is re-encoded and decoded by a strict decoder.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	line := n.Line
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return shiftLines(cleanYAMLError(err), line-1)
	}
	return nil
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// shiftLines rewrites "line N" in a re-encoded node's error to the line in the original file.
func shiftLines(err error, by int) error {
	msg := lineRE.ReplaceAllStringFunc(err.Error(), func(s string) string {
		var n int
		fmt.Sscanf(s, "line %d", &n)
		return fmt.Sprintf("line %d", n+by)
	})
	return errors.New(msg)
}

var (
	fieldNotFoundRE = regexp.MustCompile(`field (\S+) not found in type \S+`)
	typeNameRE      = regexp.MustCompile(` into playbooks\.\w+| into \[\]playbooks\.\w+`)
)

// cleanYAMLError turns yaml.v3's Go-flavoured messages into ones a playbook author can read.
func cleanYAMLError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = fieldNotFoundRE.ReplaceAllString(msg, `unknown key "$1"`)
	msg = typeNameRE.ReplaceAllString(msg, "")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return errors.New(strings.Join(lines, "; "))
}
