package strictyaml

import (
	"reflect"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// Marshal writes v as YAML, as yaml.v3 does, except that every time.Duration Decode reads in
// Prometheus' syntax is written in it (1w, not 168h0m0s), so that what Marshal writes reads as
// the file did and decodes again.
func Marshal(v any) ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	walk(&n, reflect.TypeOf(v), false, func(n *yaml.Node, t reflect.Type, foreign bool) {
		if t != durationType || foreign {
			return
		}
		if d, err := time.ParseDuration(n.Value); err == nil {
			n.Value = model.Duration(d).String()
		}
	})
	return yaml.Marshal(&n)
}
