package playbooks

import (
	"errors"

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

type namedQuery struct {
	Name  string
	Query QueryFile
	Line  int
}

// UnmarshalYAML reads the queries as a strictyaml.Map.
func (o *orderedQueries) UnmarshalYAML(n *yaml.Node) error {
	var m strictyaml.Map[QueryFile]
	err := strictyaml.Decode(n, &m)
	for _, e := range m {
		*o = append(*o, namedQuery{Name: e.Key, Query: e.Value, Line: e.Line})
	}
	return err
}

// orderedFloats is a name -> number mapping that keeps its order (the params).
type orderedFloats []namedFloat

type namedFloat struct {
	Name  string
	Value float64
}

// UnmarshalYAML reads the params as a strictyaml.Map.
func (o *orderedFloats) UnmarshalYAML(n *yaml.Node) error {
	var m strictyaml.Map[float64]
	err := strictyaml.Decode(n, &m)
	for _, e := range m {
		*o = append(*o, namedFloat{Name: e.Key, Value: e.Value})
	}
	return err
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
