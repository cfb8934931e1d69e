package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
)

// Asker is a facts lookup's asker that sends each query alone to the Prometheus at url,
// evaluated at at (the evidence engine batches and caches; a lookup's own tests need neither).
func Asker(t testing.TB, url string, at time.Time) facts.Asker {
	client, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	prom := v1.NewAPI(client)
	return func(ctx context.Context, qs []facts.Query) facts.Answer {
		a := facts.Answer{Vectors: map[string]model.Vector{}, Problems: map[string]string{}}
		for _, q := range qs {
			v, _, _, err := prom.Query(ctx, q.Expr, at)
			if err != nil {
				a.Problems[q.Name] = err.Error()
				continue
			}
			if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
				a.Vectors[q.Name] = vec
			}
		}
		return a
	}
}
