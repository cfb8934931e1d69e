package profile

import (
	"context"
	"errors"
	"fmt"

	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// Querier is the part of the Prometheus API the capture needs; v1.API implements it.
type Querier = podendpoint.Querier

// target is a pod resolved to the endpoint Prometheus scrapes.
type target = podendpoint.Target

// namePattern is what a pod or namespace name may be (podendpoint.NamePattern).
var namePattern = podendpoint.NamePattern

func podName(namespace, pod string) string { return podendpoint.Name(namespace, pod) }

// resolveQuery is the PromQL that finds a pod's scrape endpoint (podendpoint.Query).
func resolveQuery(n vllmnames.Naming, podLabel, pod, namespace string) string {
	return podendpoint.Query(n, podLabel, pod, namespace)
}

// resolve finds the pod's vLLM endpoint from what Prometheus scrapes, rendered through
// url_template and checked against allowed_networks (podendpoint.Resolver). A name several
// targets carry is an invalid request: the namespace is missing.
func (s *Service) resolve(ctx context.Context, pod, namespace string) (target, error) {
	r := podendpoint.Resolver{
		Prom: s.prom, Naming: s.naming, URL: s.cfg.urlTmpl, URLKey: "profile.url_template",
		Networks: s.cfg.networks, NotAllowed: ErrEndpointNotAllowed,
	}
	t, err := r.Resolve(ctx, pod, namespace)
	if errors.Is(err, podendpoint.ErrAmbiguousPod) {
		return t, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return t, err
}

func hostOf(endpoint string) string { return podendpoint.HostOf(endpoint) }
