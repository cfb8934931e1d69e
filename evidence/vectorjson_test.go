package evidence

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/common/model"
)

// sampleAnswers are vector answers as Prometheus writes them, and the odd ones it could.
var sampleAnswers = []string{
	`[]`,
	`[{"metric":{},"value":[1700000000.123,"1.5"]}]`,
	`[{"metric":{"namespace":"llm","pod":"fleet-0","engine":"1","vllm_responder_signal":"waiting"},"value":[1700000000,"3"]},` +
		`{"metric":{"pod":"fleet-1"},"value":[1700000000.5,"NaN"]},{"metric":{"pod":"x"},"value":[1,"+Inf"]},{"metric":{"pod":"y"},"value":[1,"-Inf"]}]`,
	`[{"metric":{"pod":"caf\u00e9 \"quoted\" \\ back","le":"+Inf","model_name":"meta-llama/Llama-3.1-8B"},"value":[2,"-0.25e-3"]}]`,
	`[{"metric":{"a":"b"},"histogram":[1700000000,{"count":"10","sum":"3.5","buckets":[[0,"0.1","0.2","4"],[3,"0.2","0.5","6"]]}]}]`,
	`[{"value":[1,"7"],"metric":{"pod":"order"}}]`,
	`[{"metric":{"pod":"extra"},"value":[1,"2"],"unknown":{"nested":[1,2,{"x":null}]}}]`,
	`[{"metric":null,"value":[1,"2"]}]`,
	`[{"metric":{"dup":"1","dup":"2"},"value":[1,"2"]}]`,
}

func decodeStd(t testing.TB, s string) (model.Vector, error) {
	var v model.Vector
	err := json.Unmarshal([]byte(s), &v)
	return v, err
}

func decodeIter(s string) (model.Vector, error) {
	var v model.Vector
	err := jsoniter.ConfigCompatibleWithStandardLibrary.Unmarshal([]byte(s), &v)
	return v, err
}

// sameVector compares two decoded vectors, NaN equal to NaN.
func sameVector(a, b model.Vector) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := *a[i], *b[i]
		xv, yv := float64(x.Value), float64(y.Value)
		if math.IsNaN(xv) && math.IsNaN(yv) {
			x.Value, y.Value = 0, 0
		}
		for _, h := range []**model.SampleHistogram{&x.Histogram, &y.Histogram} {
			if *h != nil && len((*h).Buckets) == 0 { // [] and nil: no buckets either way
				c := **h
				c.Buckets = nil
				*h = &c
			}
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// TestSampleDecoderMatchesModel: the jsoniter decoder of model.Sample that client_golang now
// uses decodes every answer as model.Sample's own UnmarshalJSON does.
func TestSampleDecoderMatchesModel(t *testing.T) { // not parallel: testing.AllocsPerRun
	for _, s := range sampleAnswers {
		want, err := decodeStd(t, s)
		if err != nil {
			t.Fatalf("encoding/json rejects %s: %v", s, err)
		}
		got, err := decodeIter(s)
		if err != nil {
			t.Fatalf("decoder rejects %s: %v", s, err)
		}
		if !sameVector(got, want) {
			t.Errorf("%s:\n got  %v\n want %v", s, got, want)
		}
	}
	// The decoder is the one in use: without it jsoniter calls model.Sample.UnmarshalJSON, which
	// allocates all that encoding/json does and more.
	body := `[{"metric":{"namespace":"llm","pod":"fleet-0","instance":"10.0.0.1:8000","engine":"0","vllm_responder_signal":"waiting"},"value":[1700000000,"3"]}]`
	std := testing.AllocsPerRun(50, func() { _, _ = decodeStd(t, body) })
	fast := testing.AllocsPerRun(50, func() { _, _ = decodeIter(body) })
	if fast >= std {
		t.Errorf("jsoniter decode of a sample allocates %.0f times, encoding/json %.0f: the registered decoder is not used", fast, std)
	}
}

// TestSampleDecoderRejectsWhatModelRejects: broken answers stay errors.
func TestSampleDecoderRejectsWhatModelRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		`[{"metric":{"pod":1},"value":[1,"2"]}]`,
		`[{"metric":{},"value":[1,"not a number"]}]`,
		`[{"metric":{},"value":[1,"2"],`,
	} {
		if _, err := decodeStd(t, s); err == nil {
			t.Fatalf("encoding/json accepts %s", s)
		}
		if v, err := decodeIter(s); err == nil {
			t.Errorf("decoder accepts %s as %v", s, v)
		}
	}
}

// FuzzSampleDecoder: what both decode, they decode alike. The decoder is stricter about a value
// that is not [timestamp, "float"] (client_golang's model.SamplePair decoder, which matrices
// already go through, rejects `[]`); every answer Prometheus writes has that form, and
// TestSampleDecoderMatchesModel holds the decoder to accepting them.
func FuzzSampleDecoder(f *testing.F) {
	for _, s := range sampleAnswers {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := decodeStd(t, s)
		if err != nil {
			return
		}
		got, err := decodeIter(s)
		if err != nil {
			return
		}
		if !sameVector(got, want) {
			t.Fatalf("%q:\n got  %v\n want %v", s, got, want)
		}
	})
}
