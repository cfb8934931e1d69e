package evidence

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/common/model"

	// Imported for its init: it registers jsoniter decoders for model.SamplePair and
	// model.SampleHistogramPair, which decodeSample hands the "value" and "histogram" to.
	_ "github.com/prometheus/client_golang/api/prometheus/v1"
)

// client_golang's v1 API decodes an instant vector with jsoniter, but jsoniter finds
// model.Sample's own UnmarshalJSON and calls it for every sample: encoding/json, by reflection,
// with one more json.Unmarshal (and a validation pass over its bytes) for every label name and
// value. For a fleet answer (a sample per pod, engine and signal: 250 samples for 50 pods) that
// was about 3 ms of CPU per request, taken from the same cores Prometheus answers on. client_golang
// registers a jsoniter decoder for the matrix's model.SamplePair for the same reason (client_golang
// #570, #1225), and none for the vector's model.Sample; this is that decoder.
//
// Registration is process-wide in jsoniter, and only client_golang decodes model.Sample with
// jsoniter here. decodeSample gives what model.Sample.UnmarshalJSON gives on every answer
// Prometheus sends (TestSampleDecoderMatchesModel, FuzzSampleDecoder): the metric's labels, and
// the float value with its timestamp, or a native histogram with its timestamp.
func init() {
	jsoniter.RegisterTypeDecoderFunc("model.Sample", decodeSample)
}

func decodeSample(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	s := (*model.Sample)(ptr)
	iter.ReadObjectCB(func(iter *jsoniter.Iterator, key string) bool {
		// Keys match as encoding/json matches struct fields: case-insensitively.
		switch {
		case strings.EqualFold(key, "metric"):
			if iter.ReadNil() {
				s.Metric = nil
				return true
			}
			m := make(model.Metric, 8)
			iter.ReadObjectCB(func(iter *jsoniter.Iterator, name string) bool {
				// As encoding/json does for model.Metric's keys (no UnmarshalText): unchecked.
				m[model.LabelName(jsonUTF8(name))] = model.LabelValue(jsonUTF8(iter.ReadString()))
				return iter.Error == nil
			})
			s.Metric = m
		case strings.EqualFold(key, "value"):
			var p model.SamplePair
			iter.ReadVal(&p)
			if s.Histogram == nil {
				s.Timestamp, s.Value = p.Timestamp, p.Value
			}
		case strings.EqualFold(key, "histogram"):
			var p model.SampleHistogramPair
			iter.ReadVal(&p)
			if p.Histogram != nil {
				s.Timestamp, s.Histogram, s.Value = p.Timestamp, p.Histogram, 0
			}
		default:
			iter.Skip()
		}
		return iter.Error == nil
	})
}

// jsonUTF8 is s with each byte that is not valid UTF-8 replaced by U+FFFD, as encoding/json
// decodes strings (jsoniter keeps the bytes). Prometheus writes valid UTF-8, so this is the
// fast path's one check.
func jsonUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r) // an invalid byte ranges as utf8.RuneError, one at a time
	}
	return b.String()
}
