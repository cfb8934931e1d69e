// Package podendpoint finds a vLLM pod's own HTTP endpoint from what Prometheus scrapes of it:
// the instance label of its vLLM series, rendered through a URL template, and checked against an
// allowlist of networks on every connection. Only what Prometheus scrapes can be reached, so a
// chat user cannot point the responder at an arbitrary host. The profile capture and the probe
// reach pods this way.
package podendpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// Errors of Resolve.
var (
	// ErrUnknownPod: Prometheus has no vLLM series for the pod, so there is no endpoint to reach.
	ErrUnknownPod = errors.New("pod unknown to Prometheus")
	// ErrAmbiguousPod: several scrape targets carry the pod's name.
	ErrAmbiguousPod = errors.New("pod is ambiguous")
)

// LockPrefix starts the store key of a pod's lock (LockPrefix + namespace/pod): whatever drives a
// pod's engine from the responder takes it, a profile capture or a probe, so that one never runs
// beside the other (a capture's stop_profile stalls the engine: a probe then would time out and
// read as a wedge) and never two of either at once. The key is the one profile captures always
// used, so replicas of mixed versions agree during an upgrade.
const LockPrefix = "profile:lock:"

// DefaultURLTemplate reaches the pod at the address Prometheus scrapes.
const DefaultURLTemplate = "http://{{.instance}}"

// NamePattern is what a pod or namespace name may be: Kubernetes object names, plus upper case
// and underscores for pod labels outside Kubernetes, and host:port for a pod named by its
// instance (static scrape configs).
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._:-]{0,251}[A-Za-z0-9])?$`)

// Querier is the part of the Prometheus API resolution needs; v1.API implements it.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error)
}

// Target is a pod resolved to the endpoint Prometheus scrapes.
type Target struct {
	Namespace string
	Pod       string
	Instance  string
	Model     string // model_name of its series (the first one)
	Endpoint  string // base URL rendered from the URL template
}

// Name is namespace/pod, or pod without a namespace.
func (t Target) Name() string { return Name(t.Namespace, t.Pod) }

// Name is namespace/pod, or pod without a namespace.
func Name(namespace, pod string) string {
	if namespace == "" {
		return pod
	}
	return namespace + "/" + pod
}

// TemplateData is what a URL template sees: {{.instance}}, {{.pod}}, {{.namespace}}.
func TemplateData(instance, pod, namespace string) map[string]string {
	return map[string]string{"instance": instance, "pod": pod, "namespace": namespace}
}

// ParseURLTemplate compiles a URL template and renders it once on sample data, so that a label it
// names and a pod does not have fails at load, and so must a template that does not render an
// http(s) URL with a host.
func ParseURLTemplate(name, text string) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, TemplateData("10.0.0.1:8000", "vllm-0", "default")); err != nil {
		return nil, err
	}
	if u, err := url.Parse(buf.String()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("must render an http(s) URL with a host, got %q", buf.String())
	}
	return t, nil
}

// Resolver resolves pods to their endpoints.
type Resolver struct {
	Prom   Querier
	Naming vllmnames.Naming
	// URL renders the endpoint (ParseURLTemplate); URLKey names it in errors (profile.url_template).
	URL    *template.Template
	URLKey string
	// Networks, when set, are the only networks an endpoint may be in; NotAllowed is the error a
	// refused address wraps (the caller's, naming its allowed_networks key).
	Networks   []netip.Prefix
	NotAllowed error
}

// Query is the PromQL that finds a pod's scrape endpoint by the label that names pods; values are
// quoted, never concatenated raw. Router series (vllm.router_label) are excluded: a
// production-stack router is not an engine.
func Query(n vllmnames.Naming, podLabel, pod, namespace string) string {
	sel := promql.Matcher(podLabel, pod)
	if namespace != "" {
		sel += "," + promql.Matcher("namespace", namespace)
	}
	return "group by (namespace, instance, model_name) (" + n.Selector("num_requests_running", sel) + ")"
}

// Resolve finds the pod's vLLM endpoint from the instance label Prometheus attached to its series,
// renders it through the URL template and checks an IP literal against the networks (a name is
// checked on every connection, after resolution: Dialer).
//
// Pods are looked up by vllm.pod_label (default pod); where no series has it, as under a static
// scrape config with only job and instance, the name is looked up as an instance.
func (r *Resolver) Resolve(ctx context.Context, pod, namespace string) (Target, error) {
	type found struct{ ns, instance string }
	var all []found
	modelName := ""
	podLabel := r.Naming.Pod()
	labelsTried := []string{podLabel}
	if podLabel != vllmnames.FallbackPodLabel {
		labelsTried = append(labelsTried, vllmnames.FallbackPodLabel)
	}
	for _, lbl := range labelsTried {
		val, _, _, err := r.Prom.Query(ctx, Query(r.Naming, lbl, pod, namespace), time.Now())
		if err != nil {
			return Target{}, fmt.Errorf("resolve pod %s with Prometheus: %w", Name(namespace, pod), err)
		}
		vec, ok := val.(model.Vector)
		if !ok {
			return Target{}, fmt.Errorf("resolve pod %s: Prometheus returned %s, want a vector", Name(namespace, pod), val.Type())
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
		return Target{}, fmt.Errorf("%w: no %s series with %s=%q%s%s (is it scraped, with a %s label?)",
			ErrUnknownPod, r.Naming.Metric("num_requests_running"), podLabel, pod, ns, also, podLabel)
	case len(all) > 1:
		var names []string
		for _, f := range all {
			names = append(names, Name(f.ns, pod)+" at "+f.instance)
		}
		hint := "pass the namespace"
		if namespace != "" {
			hint = "the pod has several scrape targets"
		}
		return Target{}, fmt.Errorf("%w: pod %s (%s): %s", ErrAmbiguousPod, pod, hint, strings.Join(names, ", "))
	}
	t := Target{Namespace: all[0].ns, Pod: pod, Instance: all[0].instance, Model: modelName}
	var buf bytes.Buffer
	if err := r.URL.Execute(&buf, TemplateData(t.Instance, t.Pod, t.Namespace)); err != nil {
		return Target{}, fmt.Errorf("render %s for %s: %w", r.URLKey, t.Name(), err)
	}
	t.Endpoint = buf.String()
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("%s rendered %q for %s: not an http(s) URL", r.URLKey, t.Endpoint, t.Name())
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !Allowed(r.Networks, a) {
		return Target{}, fmt.Errorf("%w: %s (pod %s)", r.NotAllowed, a, t.Name())
	}
	return t, nil
}

// Allowed reports whether a is in one of nets (every address when nets is empty).
func Allowed(nets []netip.Prefix, a netip.Addr) bool {
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

// ParseNetworks parses allowed_networks; errs has one error per entry that is not a CIDR, with
// its index.
func ParseNetworks(cidrs []string) (nets []netip.Prefix, errs map[int]error) {
	for i, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			if errs == nil {
				errs = map[int]error{}
			}
			errs[i] = fmt.Errorf("%q is not a CIDR (10.0.0.0/8, fd00::/8)", s)
			continue
		}
		nets = append(nets, p.Masked())
	}
	return nets, errs
}

// Transport is an HTTP transport to pods: never through a proxy (the allowlist is about the pod),
// each connection checked against nets on the address actually dialled, after name resolution
// (a DNS name that resolves outside them is refused with notAllowed).
func Transport(nets []netip.Prefix, notAllowed error) *http.Transport {
	d := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot parse %q", notAllowed, address)
			}
			if !Allowed(nets, ap.Addr()) {
				return fmt.Errorf("%w: %s", notAllowed, ap.Addr())
			}
			return nil
		},
	}
	return &http.Transport{
		Proxy:               nil,
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// HostOf returns the host of an endpoint URL, for logs that must not show more.
func HostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return ""
}
