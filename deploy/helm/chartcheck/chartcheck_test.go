// Package chartcheck checks the vllm-responder Helm chart's rendered output: every document decodes
// strictly into its Kubernetes API type (unknown or misspelt fields fail), the Prometheus Operator
// resources carry their required fields, the rendered responder config loads with the responder's
// own strict loader, and the files copied into the chart are not stale.
//
// The chart is rendered in-process with helm's own Go packages (chart loader, engine, lint: the
// code behind `helm template` and `helm lint`), so no helm binary has to be built. When
// CHARTCHECK_RENDERED names a directory of manifests rendered by the helm CLI (deploy/helm/test.sh
// does so when it finds one), those are checked instead.
package chartcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

const (
	repoRoot  = "../../.."
	chartDir  = "../vllm-responder"
	secretDir = "/etc/vllm-responder/secrets/"
)

// doc is one rendered manifest: its source (file and index), kind and raw JSON.
type doc struct {
	source     string
	apiVersion string
	kind       string
	name       string
	json       []byte
}

// rendered returns the documents of every values set, by values set name: the helm CLI's
// output when CHARTCHECK_RENDERED names a directory of *.yaml files (deploy/helm/test.sh with a
// helm binary), else the chart rendered in-process with helm's own packages (render_test.go).
func rendered(t *testing.T) map[string][]doc {
	t.Helper()
	streams := map[string][]byte{}
	if dir := os.Getenv("CHARTCHECK_RENDERED"); dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no rendered manifests in %s (err %v)", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			streams[strings.TrimSuffix(filepath.Base(f), ".yaml")] = b
		}
	} else {
		streams = renderedInProcess(t)
	}
	out := map[string][]doc{}
	for set, b := range streams {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for i := 0; ; i++ {
			raw, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", set, i, err)
			}
			if len(bytes.TrimSpace(stripComments(raw))) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSONStrict(raw)
			if err != nil {
				t.Fatalf("%s: document %d: %v", set, i, err)
			}
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(j, &meta); err != nil {
				t.Fatalf("%s: document %d: %v", set, i, err)
			}
			out[set] = append(out[set], doc{source: fmt.Sprintf("%s[%d] %s/%s", set, i, meta.Kind, meta.Metadata.Name),
				apiVersion: meta.APIVersion, kind: meta.Kind, name: meta.Metadata.Name, json: j})
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// strict decodes j into v, failing on unknown fields, case-mismatched fields and duplicates.
func strict(j []byte, v any) error {
	strictErrs, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		var msgs []string
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return fmt.Errorf("strict decoding: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// typed is what each rendered document decodes into: known Kubernetes types, and the
// monitoring.coreos.com kinds as unstructured objects (checked field by field below).
type typed struct {
	deployments   []*appsv1.Deployment
	services      []*corev1.Service
	configMaps    []*corev1.ConfigMap
	secrets       []*corev1.Secret
	pdbs          []*policyv1.PodDisruptionBudget
	ingresses     []*networkingv1.Ingress
	monitoring    []*unstructured.Unstructured
	serviceAccnts []*corev1.ServiceAccount
}

func decodeAll(t *testing.T, docs []doc) *typed {
	t.Helper()
	ty := &typed{}
	for _, d := range docs {
		var err error
		switch d.apiVersion + " " + d.kind {
		case "apps/v1 Deployment":
			v := &appsv1.Deployment{}
			err = strict(d.json, v)
			ty.deployments = append(ty.deployments, v)
		case "v1 Service":
			v := &corev1.Service{}
			err = strict(d.json, v)
			ty.services = append(ty.services, v)
		case "v1 ConfigMap":
			v := &corev1.ConfigMap{}
			err = strict(d.json, v)
			ty.configMaps = append(ty.configMaps, v)
		case "v1 Secret":
			v := &corev1.Secret{}
			err = strict(d.json, v)
			ty.secrets = append(ty.secrets, v)
		case "v1 ServiceAccount":
			v := &corev1.ServiceAccount{}
			err = strict(d.json, v)
			ty.serviceAccnts = append(ty.serviceAccnts, v)
		case "policy/v1 PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			err = strict(d.json, v)
			ty.pdbs = append(ty.pdbs, v)
		case "networking.k8s.io/v1 Ingress":
			v := &networkingv1.Ingress{}
			err = strict(d.json, v)
			ty.ingresses = append(ty.ingresses, v)
		case "monitoring.coreos.com/v1 PrometheusRule", "monitoring.coreos.com/v1 ServiceMonitor":
			u := &unstructured.Unstructured{}
			err = u.UnmarshalJSON(d.json)
			ty.monitoring = append(ty.monitoring, u)
		default:
			err = fmt.Errorf("unexpected apiVersion/kind %q %q: add it to chartcheck", d.apiVersion, d.kind)
		}
		if err != nil {
			t.Errorf("%s: %v", d.source, err)
		}
	}
	return ty
}

func TestRenderedManifestsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	for set, docs := range rendered(t) {
		t.Run(set, func(t *testing.T) {
			ty := decodeAll(t, docs)
			if len(ty.deployments) == 0 || len(ty.services) == 0 || len(ty.configMaps) == 0 {
				t.Fatalf("expected at least a Deployment, a Service and a ConfigMap, got %d documents", len(docs))
			}
			for _, d := range docs {
				if d.name == "" {
					t.Errorf("%s: metadata.name is empty", d.source)
				}
			}
		})
	}
}

func responderDeployment(t *testing.T, ty *typed) *appsv1.Deployment {
	t.Helper()
	for _, d := range ty.deployments {
		if len(d.Spec.Template.Spec.Containers) > 0 && d.Spec.Template.Spec.Containers[0].Name == "responder" {
			return d
		}
	}
	t.Fatal("no Deployment with a container named responder")
	return nil
}

func TestResponderPodsAreHardenedAndProbed(t *testing.T) {
	for set, docs := range rendered(t) {
		t.Run(set, func(t *testing.T) {
			ty := decodeAll(t, docs)
			for _, dep := range ty.deployments {
				pod := dep.Spec.Template.Spec
				for _, c := range pod.Containers {
					sc := c.SecurityContext
					where := dep.Name + "/" + c.Name
					if sc == nil {
						t.Errorf("%s: no securityContext", where)
						continue
					}
					nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (pod.SecurityContext != nil && pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot)
					if !nonRoot {
						t.Errorf("%s: runAsNonRoot is not true", where)
					}
					if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
						t.Errorf("%s: readOnlyRootFilesystem is not true", where)
					}
					if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
						t.Errorf("%s: allowPrivilegeEscalation is not false", where)
					}
					if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
						t.Errorf("%s: capabilities do not drop ALL", where)
					}
					seccomp := sc.SeccompProfile
					if seccomp == nil && pod.SecurityContext != nil {
						seccomp = pod.SecurityContext.SeccompProfile
					}
					if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
						t.Errorf("%s: seccomp profile is not RuntimeDefault", where)
					}
					if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
						t.Errorf("%s: memory request and limit required", where)
					}
					if c.LivenessProbe == nil || c.ReadinessProbe == nil {
						t.Errorf("%s: liveness and readiness probes required", where)
					}
				}
				// Every mount has its volume.
				vols := map[string]bool{}
				for _, v := range pod.Volumes {
					vols[v.Name] = true
				}
				for _, c := range pod.Containers {
					for _, m := range c.VolumeMounts {
						if !vols[m.Name] {
							t.Errorf("%s/%s: volumeMount %q has no volume", dep.Name, c.Name, m.Name)
						}
					}
				}
				// Selector matches the template's labels.
				for k, v := range dep.Spec.Selector.MatchLabels {
					if dep.Spec.Template.Labels[k] != v {
						t.Errorf("%s: selector %s=%s does not match the pod template", dep.Name, k, v)
					}
				}
			}
			dep := responderDeployment(t, ty)
			c := dep.Spec.Template.Spec.Containers[0]
			if got := c.LivenessProbe.HTTPGet; got == nil || got.Path != "/healthz" || got.Port.String() != "http" {
				t.Errorf("liveness probe: want GET /healthz on port http, got %+v", got)
			}
			if got := c.ReadinessProbe.HTTPGet; got == nil || got.Path != "/readyz" || got.Port.String() != "http" {
				t.Errorf("readiness probe: want GET /readyz on port http, got %+v", got)
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "http" {
				t.Errorf("want one container port named http, got %+v", c.Ports)
			}
			if set == "default" && (dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2) {
				t.Errorf("default replicas: want 2, got %v", dep.Spec.Replicas)
			}
		})
	}
}

func TestServicesPDBsAndMonitorsSelectTheRightPods(t *testing.T) {
	for set, docs := range rendered(t) {
		t.Run(set, func(t *testing.T) {
			ty := decodeAll(t, docs)
			podLabels := map[string]map[string]string{}
			for _, d := range ty.deployments {
				podLabels[d.Name] = d.Spec.Template.Labels
			}
			matches := func(sel map[string]string) int {
				n := 0
				for _, l := range podLabels {
					ok := true
					for k, v := range sel {
						if l[k] != v {
							ok = false
						}
					}
					if ok {
						n++
					}
				}
				return n
			}
			var responderSvc *corev1.Service
			for _, s := range ty.services {
				if n := matches(s.Spec.Selector); n != 1 {
					t.Errorf("Service %s selects %d Deployments' pods, want exactly 1", s.Name, n)
				}
				if s.Spec.Ports[0].Name == "http" {
					responderSvc = s
				}
			}
			if responderSvc == nil {
				t.Fatal("no Service with a port named http")
			}
			for _, p := range ty.pdbs {
				if n := matches(p.Spec.Selector.MatchLabels); n != 1 {
					t.Errorf("PodDisruptionBudget %s selects %d Deployments' pods, want exactly 1", p.Name, n)
				}
			}
			if set == "default" && len(ty.pdbs) != 1 {
				t.Errorf("default values: want one PodDisruptionBudget, got %d", len(ty.pdbs))
			}
			for _, in := range ty.ingresses {
				for _, r := range in.Spec.Rules {
					for _, p := range r.HTTP.Paths {
						if p.Backend.Service == nil || p.Backend.Service.Name != responderSvc.Name || p.Backend.Service.Port.Name != "http" {
							t.Errorf("Ingress %s path %s: backend is not the responder's http port", in.Name, p.Path)
						}
						if !strings.HasPrefix(p.Path, "/slack/") {
							t.Errorf("Ingress %s exposes %s: only /slack/ paths should be public", in.Name, p.Path)
						}
					}
				}
			}
			for _, u := range ty.monitoring {
				where := u.GetKind() + " " + u.GetName()
				switch {
				case u.GetKind() == "ServiceMonitor" && strings.HasSuffix(u.GetName(), "-dcgm-exporter"):
					// An existing dcgm-exporter, scraped in the layout the GPU alert is rendered
					// for: honorLabels false (the holder's pod in exported_pod).
					sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
					if len(sel) == 0 {
						t.Errorf("%s: spec.selector.matchLabels required", where)
					}
					for k, v := range sel {
						if responderSvc.Labels[k] == v {
							t.Errorf("%s: selector %s=%s selects the responder's Service, not dcgm-exporter's", where, k, v)
						}
					}
					ns, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "namespaceSelector", "matchNames")
					if len(ns) != 1 || ns[0] == "" {
						t.Errorf("%s: namespaceSelector.matchNames: want the exporter's namespace, got %v", where, ns)
					}
					eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
					if len(eps) != 1 {
						t.Fatalf("%s: want one endpoint, got %d", where, len(eps))
					}
					m, _ := eps[0].(map[string]any)
					if m["honorLabels"] != false || m["path"] != "/metrics" || m["port"] == "" || m["port"] == nil {
						t.Errorf("%s: endpoints[0]: want honorLabels false, path /metrics and a port, got %v", where, m)
					}
					checkOnlyKeys(t, where+" spec", u.Object["spec"], "selector", "namespaceSelector", "endpoints")
					checkOnlyKeys(t, where+" endpoints[0]", m, "port", "path", "interval", "scrapeTimeout", "honorLabels")
				case u.GetKind() == "ServiceMonitor":
					sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "selector", "matchLabels")
					for k, v := range sel {
						if responderSvc.Labels[k] != v {
							t.Errorf("%s: selector %s=%s does not match the responder Service's labels", where, k, v)
						}
					}
					if len(sel) == 0 {
						t.Errorf("%s: spec.selector.matchLabels required", where)
					}
					eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
					if len(eps) == 0 {
						t.Fatalf("%s: spec.endpoints required", where)
					}
					for i, e := range eps {
						m, _ := e.(map[string]any)
						if m["port"] != "http" || m["path"] != "/metrics" {
							t.Errorf("%s: endpoints[%d]: want port http and path /metrics, got %v", where, i, m)
						}
					}
					checkOnlyKeys(t, where+" spec", u.Object["spec"], "selector", "namespaceSelector", "endpoints")
				case u.GetKind() == "PrometheusRule":
					groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
					if len(groups) == 0 {
						t.Fatalf("%s: spec.groups required", where)
					}
					checkOnlyKeys(t, where+" spec", u.Object["spec"], "groups")
					alerts := 0
					for gi, g := range groups {
						gm, _ := g.(map[string]any)
						if s, _ := gm["name"].(string); s == "" {
							t.Errorf("%s: groups[%d].name required", where, gi)
						}
						rules, _ := gm["rules"].([]any)
						for ri, r := range rules {
							rm, _ := r.(map[string]any)
							if s, _ := rm["expr"].(string); s == "" {
								t.Errorf("%s: groups[%d].rules[%d].expr required", where, gi, ri)
							}
							a, _ := rm["alert"].(string)
							rec, _ := rm["record"].(string)
							if (a == "") == (rec == "") {
								t.Errorf("%s: groups[%d].rules[%d]: exactly one of alert and record", where, gi, ri)
							}
							if a != "" {
								alerts++
							}
						}
					}
					if alerts != 9 { // deploy/prometheus AlertNames
						t.Errorf("%s: want the 9 built-in alerts, got %d", where, alerts)
					}
				}
			}
		})
	}
}

func checkOnlyKeys(t *testing.T, where string, v any, allowed ...string) {
	t.Helper()
	m, _ := v.(map[string]any)
	for k := range m {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			t.Errorf("%s: unexpected field %q", where, k)
		}
	}
}

// TestRenderedConfigLoadsWithTheResponderLoader decodes config.yaml from the ConfigMap with the
// responder's own strict loader (config.Parse), after pointing the *_file paths at temporary
// files, and checks that every *_file path is a file the pod mounts from a Secret.
func TestRenderedConfigLoadsWithTheResponderLoader(t *testing.T) {
	for set, docs := range rendered(t) {
		t.Run(set, func(t *testing.T) {
			ty := decodeAll(t, docs)
			dep := responderDeployment(t, ty)
			var cfg string
			for _, cm := range ty.configMaps {
				if c, ok := cm.Data["config.yaml"]; ok {
					cfg = c
				}
			}
			if cfg == "" {
				t.Fatal("no ConfigMap with config.yaml")
			}
			// Files the pod mounts under the secrets directory.
			mounted := map[string]bool{}
			for _, v := range dep.Spec.Template.Spec.Volumes {
				if v.Projected == nil {
					continue
				}
				for _, s := range v.Projected.Sources {
					if s.Secret == nil {
						continue
					}
					for _, it := range s.Secret.Items {
						mounted[it.Path] = true
					}
				}
			}
			tmp := t.TempDir()
			re := regexp.MustCompile(regexp.QuoteMeta(secretDir) + `([A-Za-z0-9._-]+)`)
			for _, m := range re.FindAllStringSubmatch(cfg, -1) {
				if !mounted[m[1]] {
					t.Errorf("config refers to %s%s, which no Secret volume item provides", secretDir, m[1])
				}
				value := "secret-value"
				switch {
				case strings.HasPrefix(m[1], "slack-bot"):
					value = "xoxb-test"
				case strings.HasPrefix(m[1], "slack-app"):
					value = "xapp-test"
				case strings.HasPrefix(m[1], "teams-webhook-url"):
					value = "https://prod.westeurope.logic.example/workflows/1/triggers/manual/paths/invoke?sig=test"
				case strings.HasPrefix(m[1], "webhook-"):
					value = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD8n4CJ7M8Ig4="
				}
				if err := os.WriteFile(filepath.Join(tmp, m[1]), []byte(value+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg = strings.ReplaceAll(cfg, secretDir, tmp+"/")
			for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
				t.Setenv(e.Name, e.Value)
			}
			c, err := config.Parse("ConfigMap config.yaml", []byte(cfg))
			if err != nil {
				t.Fatalf("the rendered config does not load:\n%v\n--- config.yaml ---\n%s", err, cfg)
			}
			if c.Listen != ":8080" {
				t.Errorf("listen: want :8080, got %q", c.Listen)
			}
			replicas := int32(1)
			if dep.Spec.Replicas != nil {
				replicas = *dep.Spec.Replicas
			}
			if replicas >= 2 && !c.Redis.RedisEnabled() {
				t.Errorf("%d replicas without Redis (neither redis.url nor redis.sentinel)", replicas)
			}
			if c.Playbooks.Dir != "" {
				found := false
				for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
					found = found || strings.HasPrefix(m.MountPath, c.Playbooks.Dir+"/")
				}
				if !found {
					t.Errorf("playbooks.dir %s: nothing is mounted there", c.Playbooks.Dir)
				}
			}
		})
	}
}

func TestUserPlaybooksInTheChartParse(t *testing.T) {
	for set, docs := range rendered(t) {
		t.Run(set, func(t *testing.T) {
			ty := decodeAll(t, docs)
			for _, cm := range ty.configMaps {
				if !strings.HasSuffix(cm.Name, "-playbooks") {
					continue
				}
				for name, body := range cm.Data {
					if _, err := playbooks.Parse(name, []byte(body), sources.Catalog()); err != nil {
						t.Errorf("ConfigMap %s: %v", cm.Name, err)
					}
				}
			}
		})
	}
}

// TestCopiesInTheChartAreUpToDate: .Files.Get cannot reach outside the chart, so the rules and
// the dashboard are copied into files/. Refresh with:
//
//	cp deploy/prometheus/vllm-alerts.rules.yml deploy/prometheus/vllm-alerts.kserve.rules.yml deploy/grafana/vllm-responder-dashboard.json deploy/helm/vllm-responder/files/
func TestCopiesInTheChartAreUpToDate(t *testing.T) {
	for src, dst := range map[string]string{
		repoRoot + "/deploy/prometheus/vllm-alerts.rules.yml":        chartDir + "/files/vllm-alerts.rules.yml",
		repoRoot + "/deploy/prometheus/vllm-alerts.kserve.rules.yml": chartDir + "/files/vllm-alerts.kserve.rules.yml",
		repoRoot + "/deploy/grafana/vllm-responder-dashboard.json":   chartDir + "/files/vllm-responder-dashboard.json",
	} {
		a, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s is stale: copy %s over it (cp %s %s)", dst, src, src, dst)
		}
	}
}

// exported holds the responder's metrics as declared in Go: name, type and label names.
type exported struct {
	kind   string // Counter, Gauge, Histogram, Summary
	labels []string
}

var declRE = regexp.MustCompile(`(?s)prometheus\.New(Counter|Gauge|Histogram|Summary)(?:Vec)?\(prometheus\.\w+Opts\{\s*Name:\s*"([a-z_:]+)".*?\}(?:, \[\]string\{([^}]*)\})?\)`)

func exportedMetrics(t *testing.T) map[string]exported {
	t.Helper()
	out := map[string]exported{}
	for _, dir := range []string{"metrics", "notify", "notify/slack", "profile"} {
		files, _ := filepath.Glob(filepath.Join(repoRoot, dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range declRE.FindAllStringSubmatch(string(b), -1) {
				var labels []string
				for _, l := range strings.Split(m[3], ",") {
					if l = strings.Trim(strings.TrimSpace(l), `"`); l != "" {
						labels = append(labels, l)
					}
				}
				out[m[2]] = exported{kind: m[1], labels: labels}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metric declarations in metrics/, notify/, notify/slack, profile/: has the declaration style changed? %v", len(out), out)
	}
	return out
}

func TestDashboardQueriesOnlyMetricsTheResponderExports(t *testing.T) {
	exp := exportedMetrics(t)
	b, err := os.ReadFile(repoRoot + "/deploy/grafana/vllm-responder-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
		Panels []struct {
			Title      string
			Type       string
			Datasource *struct{ UID string }
			Targets    []struct {
				Expr       string
				Datasource *struct{ UID string }
			}
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	hasDS := false
	var queries []string
	for _, v := range dash.Templating.List {
		if v.Type == "datasource" && v.Name == "datasource" {
			hasDS = true
		}
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				queries = append(queries, s)
			}
		}
	}
	if !hasDS {
		t.Error("the dashboard needs a datasource variable named datasource")
	}
	nameRE := regexp.MustCompile(`vllm_responder_[a-z_]+`)
	byRE := regexp.MustCompile(`by \(([^)]*)\)`)
	// Labels every scraped series has, or that histograms add.
	scrapeLabels := map[string]bool{"namespace": true, "pod": true, "job": true, "instance": true, "service": true, "container": true, "endpoint": true}
	used := map[string]bool{}
	panels := 0
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		panels++
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be ${datasource}", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		for _, tg := range p.Targets {
			queries = append(queries, tg.Expr)
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: target datasource must be ${datasource}", p.Title)
			}
		}
	}
	for _, q := range queries {
		names := nameRE.FindAllString(q, -1)
		if len(names) == 0 {
			t.Errorf("query names no vllm_responder_ metric: %s", q)
		}
		var labels map[string]bool
		for _, n := range names {
			base, e := n, exp[n]
			ok := e.kind != ""
			if !ok {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b := strings.TrimSuffix(n, suf); b != n && (exp[b].kind == "Histogram" || (exp[b].kind == "Summary" && suf != "_bucket")) {
						base, e, ok = b, exp[b], true
					}
				}
			}
			if !ok {
				t.Errorf("query uses %s, which metrics/, notify/, notify/slack and profile/ do not export: %s", n, q)
				continue
			}
			used[base] = true
			labels = map[string]bool{}
			for _, l := range e.labels {
				labels[l] = true
			}
			if strings.HasSuffix(n, "_bucket") {
				labels["le"] = true
			}
		}
		if len(names) == 1 && labels != nil {
			for _, m := range byRE.FindAllStringSubmatch(q, -1) {
				for _, l := range strings.Split(m[1], ",") {
					if l = strings.TrimSpace(l); l != "" && !labels[l] && !scrapeLabels[l] {
						t.Errorf("query groups by %q, which %s does not have: %s", l, names[0], q)
					}
				}
			}
		}
	}
	if panels < 8 {
		t.Errorf("want at least 8 panels, got %d", panels)
	}
	var unused []string
	for n := range exp {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	t.Logf("exported metrics not on the dashboard: %v", unused)
}
