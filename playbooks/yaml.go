package playbooks

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/internal/strictyaml"
)

// A playbook and its fixtures are decoded by internal/strictyaml: unknown keys are errors, each
// error names its line as written and its full key (`line 4: unknown key
// "queries.waiting.unitt"`). What is the playbooks' own is here: the queries and params keep the
// order they are written in (evidence is listed that way), and a query is written either as its
// PromQL or as an object.

// orderedQueries are a playbook's queries, in the order they are written.
type orderedQueries []namedQuery

// namedQuery is one query as written, or a spread: `...NAME:` (no value) places the queries of
// fragment NAME there (Spread NAME, Name empty).
type namedQuery struct {
	Name   string
	Query  QueryFile
	Line   int
	Spread string
	// Source is the file the entry was written in, when it is not the playbook's own (a
	// fragment's, after merging: see fragment.go).
	Source string
}

// spreadPrefix starts a spread: `...progress` stands for fragment progress's entries of the
// section it is written in. No query, param or rule name can start with it.
const spreadPrefix = "..."

// UnmarshalYAML reads the queries as a strictyaml.Map.
func (o *orderedQueries) UnmarshalYAML(n *yaml.Node) error {
	var m strictyaml.Map[QueryFile]
	err := strictyaml.Decode(n, &m)
	for i, e := range m {
		nq := namedQuery{Name: e.Key, Query: e.Value, Line: e.Line}
		if name, ok := strings.CutPrefix(e.Key, spreadPrefix); ok {
			nq = namedQuery{Spread: name, Line: e.Line}
			if v := n.Content[2*i+1]; v.Kind != yaml.ScalarNode || v.Tag != "!!null" {
				err = errors.Join(err, &strictyaml.Error{Line: e.Line, Key: e.Key, Msg: "a spread takes no value (it places fragment " + name + "'s entries here)"})
			}
		}
		*o = append(*o, nq)
	}
	return err
}

// orderedFloats is a name -> number mapping that keeps its order (the params).
type orderedFloats []namedFloat

type namedFloat struct {
	Name   string
	Value  float64
	Line   int
	Source string // as namedQuery's
}

// UnmarshalYAML reads the params as a strictyaml.Map.
func (o *orderedFloats) UnmarshalYAML(n *yaml.Node) error {
	return decodeOrdered(n, o, func(e strictyaml.Entry[float64]) namedFloat {
		return namedFloat{Name: e.Key, Value: e.Value, Line: e.Line}
	})
}

// decodeOrdered reads a mapping as a strictyaml.Map and appends each entry, made an E, to out.
func decodeOrdered[V, E any, L ~[]E](n *yaml.Node, out *L, each func(strictyaml.Entry[V]) E) error {
	var m strictyaml.Map[V]
	err := strictyaml.Decode(n, &m)
	for _, e := range m {
		*out = append(*out, each(e))
	}
	return err
}

// orderedTemplates are the named templates, in the order they are written.
type orderedTemplates []namedTemplate

type namedTemplate struct {
	Name   string
	Text   string
	Line   int
	Source string // as namedQuery's
}

// UnmarshalYAML reads the named templates (or conditions) as a strictyaml.Map.
func (o *orderedTemplates) UnmarshalYAML(n *yaml.Node) error {
	return decodeOrdered(n, o, func(e strictyaml.Entry[string]) namedTemplate {
		return namedTemplate{Name: e.Key, Text: e.Value, Line: e.Line}
	})
}

// verdictList is a playbook's ordered verdicts: rules, and spreads (`- ...capacity`) that place
// a fragment's rules.
type verdictList []verdictEntry

type verdictEntry struct {
	VerdictFile
	Line   int
	Spread string
	// Source and Index are where the rule was written: a fragment's file and its place in that
	// file's list, after merging (Source empty: the playbook's own, Index its place there).
	Source string
	Index  int
}

// UnmarshalYAML reads each rule strictly, and `...NAME` as a spread.
func (l *verdictList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return errors.New("must be a list of verdicts")
	}
	var errs []error
	for i, item := range n.Content {
		e := verdictEntry{Line: item.Line, Index: i}
		if item.Kind == yaml.ScalarNode {
			name, ok := strings.CutPrefix(item.Value, spreadPrefix)
			if !ok || name == "" {
				errs = append(errs, &strictyaml.Error{Line: item.Line, Key: fmt.Sprintf("[%d]", i),
					Msg: "a verdict is an object with id, when and title, or ...FRAGMENT to place a fragment's verdicts"})
				continue
			}
			e.Spread = name
		} else if err := strictyaml.Decode(item, &e.VerdictFile); err != nil {
			var list strictyaml.Errors
			if errors.As(err, &list) {
				for _, se := range list {
					errs = append(errs, &strictyaml.Error{Line: se.Line, Key: joinKey(fmt.Sprintf("[%d]", i), se.Key), Msg: se.Msg})
				}
			} else {
				errs = append(errs, err)
			}
		}
		*l = append(*l, e)
	}
	return errors.Join(errs...)
}

// joinKey is key under an index: "[2]" and "titel" make "[2].titel".
func joinKey(index, key string) string {
	if key == "" {
		return index
	}
	return index + "." + key
}

// UnmarshalYAML accepts `name: promql` and `name: {expr: ..., unit: ...}`.
func (q *QueryFile) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		q.Expr = n.Value
		return nil
	case yaml.MappingNode:
		type plain QueryFile
		return strictyaml.Decode(n, (*plain)(q))
	}
	return errors.New("must be a PromQL string or an object with expr")
}

// decodeFile decodes a playbook or a fixture file strictly into v; every error is one *Error of
// source.
func decodeFile(source string, data []byte, v any) error {
	err := strictyaml.Unmarshal(data, v)
	var list strictyaml.Errors
	if !errors.As(err, &list) {
		if err != nil {
			return &Error{Source: source, Msg: err.Error()}
		}
		return nil
	}
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = &Error{Source: source, Msg: e.Error()}
	}
	return errors.Join(errs...)
}
