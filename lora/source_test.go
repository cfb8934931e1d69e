package lora_test

import (
	"context"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/lora"
)

// The LoRA series as a source: no pod (no selector), no query; a pod, one query on the
// selector the engine gives, its series' labels the facts.
func TestTheLoRASeriesAsASourceAskOnlyAboutAPod(t *testing.T) {
	var asked []string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		for _, q := range qs {
			asked = append(asked, q.Expr)
		}
		return facts.Answer{Vectors: map[string]model.Vector{lora.QueryName: {{
			Metric: model.Metric{"max_lora": "2", "running_lora_adapters": "sql,chat"}, Value: 1}}}}
	}
	none := facts.Subject{Series: func(string) string { return "" }}
	if r := (lora.Source{}).Lookup(context.Background(), ask, none); r != nil || len(asked) > 0 {
		t.Fatalf("without a pod: %+v, asked %q", r, asked)
	}
	pod := facts.Subject{Series: func(m string) string { return m + `{namespace="llm",pod="vllm-0"}` }}
	r := (lora.Source{}).Lookup(context.Background(), ask, pod)
	want := `topk(1, vllm:lora_requests_info{namespace="llm",pod="vllm-0"})`
	if r == nil || len(asked) != 1 || asked[0] != want || r.Queries[lora.QueryName] != want {
		t.Fatalf("with a pod: %+v, asked %q", r, asked)
	}
	if n := r.Facts.Number("lora_running"); n == nil || *n != 2 || r.Facts.Label("lora_running_adapters") != "sql, chat" || !r.Facts.Looked(lora.SourceName) {
		t.Errorf("facts %+v", r.Facts)
	}
}
