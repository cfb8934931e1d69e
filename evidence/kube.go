package evidence

import (
	"context"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/kube"
)

// readRestarts reads what kube-state-metrics says about the restarts of the pod the plan's scope
// names (package kube), through the engine's querier, in one request beside the run's queries.
// It reads nothing when EngineOptions.Kube is nil, when the scope names no pod, or names it by
// its instance (a static scrape: no Kubernetes pod to look up); nil without series is no note,
// a failed request is.
func (e *Engine) readRestarts(ctx context.Context, pl plan) (*kube.Restarts, string) {
	pod := pl.x.Scope[pl.x.PodLabel]
	if e.opt.Kube == nil || pl.x.PodLabel == "" || pl.x.PodLabel == vllmnames.FallbackPodLabel || pod == "" {
		return nil, ""
	}
	qctx, cancel := context.WithTimeoutCause(ctx, e.opt.QueryTimeout, e.deadlineErr)
	defer cancel()
	select {
	case e.sem <- struct{}{}:
	case <-qctx.Done():
		return nil, "restarts from kube-state-metrics: not read, no query slot before the deadline"
	}
	defer func() { <-e.sem }()
	t0 := time.Now()
	r, err := kube.Reader{Q: e.q, Labels: *e.opt.Kube}.Restarts(qctx, pl.x.Scope["namespace"], pod, pl.p.Window, pl.at)
	status := QueryOK
	switch {
	case err != nil && qctx.Err() != nil:
		status = QueryTimeout
	case err != nil:
		status = QueryError
	case r == nil:
		status = QueryEmpty
	}
	if e.opt.Observer != nil {
		e.opt.Observer.ObserveQuery(time.Since(t0), status)
	}
	if err != nil {
		e.opt.Logger.Warn().Err(err).Str("playbook", pl.p.Name).Msg("restarts from kube-state-metrics not available")
		return nil, "restarts from kube-state-metrics: not available, " + redactURL(err.Error())
	}
	return r, ""
}
