package profile

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// Querier is the part of the Prometheus API the capture needs; v1.API implements it.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// target is a pod resolved to the endpoint Prometheus scrapes.
type target struct {
	Namespace string
	Pod       string
	Instance  string
	Model     string // model_name of its series (the first one, for profile.kinds)
	Endpoint  string // base URL rendered from profile.url_template
}

func (t target) name() string { return podName(t.Namespace, t.Pod) }

func podName(namespace, pod string) string {
	if namespace == "" {
		return pod
	}
	return namespace + "/" + pod
}

// Kubernetes object names, plus upper case and underscores for pod labels outside Kubernetes, and
// host:port for a pod named by its instance (static scrape configs).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$`)

// resolveQuery is the PromQL that finds a pod's scrape endpoint by the label that names pods;
// values are quoted by the project's one quoting function (promql.Matcher), never concatenated
// raw. Router series (vllm.router_label) are excluded: a production-stack router is not an
// engine to profile.
func resolveQuery(n vllmnames.Naming, podLabel, pod, namespace string) string {
	sel := promql.Matcher(podLabel, pod)
	if namespace != "" {
		sel += "," + promql.Matcher("namespace", namespace)
	}
	return "group by (namespace, instance, model_name) (" + n.Selector("num_requests_running", sel) + ")"
}

// resolve finds the pod's vLLM endpoint from the instance label Prometheus attached to its
// series, renders it through url_template and checks it against allowed_networks.
//
// Pods are looked up by vllm.pod_label (default pod); where no series has it, as under a static
// scrape config with only job and instance, the name is looked up as an instance.
func (s *Service) resolve(ctx context.Context, pod, namespace string) (target, error) {
	type found struct{ ns, instance string }
	var all []found
	modelName := ""
	labelsTried := []string{s.podLabel}
	if s.podLabel != vllmnames.FallbackPodLabel {
		labelsTried = append(labelsTried, vllmnames.FallbackPodLabel)
	}
	for _, lbl := range labelsTried {
		q := resolveQuery(s.naming, lbl, pod, namespace)
		val, _, _, err := s.prom.Query(ctx, q, time.Now())
		if err != nil {
			return target{}, fmt.Errorf("resolve pod %s with Prometheus: %w", podName(namespace, pod), err)
		}
		vec, ok := val.(model.Vector)
		if !ok {
			return target{}, fmt.Errorf("resolve pod %s: Prometheus returned %s, want a vector", podName(namespace, pod), val.Type())
		}
		for _, smp := range vec {
			f := found{string(smp.Metric["namespace"]), string(smp.Metric["instance"])}
			if f.instance != "" && !slices.Contains(all, f) {
				all = append(all, f)
			}
			if modelName == "" {
				modelName = string(smp.Metric["model_name"])
			}
		}
		if len(all) > 0 {
			break
		}
	}
	switch {
	case len(all) == 0:
		ns := ""
		if namespace != "" {
			ns = fmt.Sprintf(" namespace=%q", namespace)
		}
		also := ""
		if len(labelsTried) > 1 {
			also = fmt.Sprintf(", nor with %s=%q", labelsTried[1], pod)
		}
		return target{}, fmt.Errorf("%w: no %s series with %s=%q%s%s (is it scraped, with a %s label?)",
			ErrUnknownPod, s.naming.Metric("num_requests_running"), s.podLabel, pod, ns, also, s.podLabel)
	case len(all) > 1:
		var names []string
		for _, f := range all {
			names = append(names, podName(f.ns, pod)+" at "+f.instance)
		}
		hint := "pass the namespace"
		if namespace != "" {
			hint = "the pod has several scrape targets"
		}
		return target{}, fmt.Errorf("%w: pod %s is ambiguous (%s): %s", ErrInvalidRequest, pod, hint, strings.Join(names, ", "))
	}
	t := target{Namespace: all[0].ns, Pod: pod, Instance: all[0].instance, Model: modelName}
	var err error
	t.Endpoint, err = s.cfg.render(s.cfg.urlTmpl, t.Instance, t.Pod, t.Namespace)
	if err != nil {
		return target{}, fmt.Errorf("render profile.url_template for %s: %w", t.name(), err)
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return target{}, fmt.Errorf("profile.url_template rendered %q for %s: not an http(s) URL", t.Endpoint, t.name())
	}
	// An IP literal is checked now, before the pod is locked; names are checked on every
	// connection, after resolution (see allowDial).
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !allowed(s.cfg.networks, a) {
		return target{}, fmt.Errorf("%w: %s (pod %s)", ErrEndpointNotAllowed, a, t.name())
	}
	return t, nil
}

func allowed(nets []netip.Prefix, a netip.Addr) bool {
	if len(nets) == 0 {
		return true
	}
	a = a.Unmap()
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// hostOf returns the host of an endpoint URL, for logs that must not show more.
func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return ""
}
