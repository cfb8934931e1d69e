package evidence

import (
	"context"
	"time"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/probe"
)

// StallProber confirms a stall with one 1-token request to the pod (*probe.Prober).
type StallProber interface {
	Probe(ctx context.Context, pod, namespace string) probe.Result
	// Timeout bounds a whole probe.
	Timeout() time.Duration
}

// probeStall sends the probe of an engine-stalled diagnosis to its pod and adds what it found to
// the evidence (and, when the pod answered, a note: the engine took a new request, so the stall
// has ended or holds only some requests). A diagnosis of no single pod is not probed.
func (e *Engine) probeStall(ctx context.Context, pl plan, d *playbooks.Diagnosis) {
	pod, namespace := d.Scope[d.PodLabel], d.Scope["namespace"]
	if pod == "" {
		pod, namespace = pl.labels[e.pods.Name()], pl.labels["namespace"]
	}
	if pod == "" {
		d.Notes = append(d.Notes, "probe: not sent, the diagnosis names no single pod")
		return
	}
	pctx, cancel := context.WithTimeout(ctx, e.opt.Probe.Timeout())
	defer cancel()
	r := e.opt.Probe.Probe(pctx, pod, namespace)
	ev := playbooks.Evidence{Name: "probe", Title: "A 1-token request to the pod (probe)", Label: r.Text(), Text: r.Text(),
		Query: "POST /v1/completions {max_tokens: 1}"}
	if r.Endpoint != "" {
		ev.Query = "POST http://" + r.Endpoint + "/v1/completions {max_tokens: 1}"
	}
	if r.Sent() && !r.Stalled() && r.Outcome == probe.OutcomeAnswered {
		d.Notes = append(d.Notes, "probe: the pod answered a new 1-token request, so its engine takes requests now: the stall the counters show has ended, or holds only some requests (one data-parallel engine, a wedged admission)")
	}
	d.Evidence = append(d.Evidence, ev)
}
