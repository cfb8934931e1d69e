package profile

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
)

// Profiler kinds: what the vLLM server's --profiler-config names.
const (
	KindTorch  = "torch"
	KindCUDA   = "cuda"
	KindProton = "proton"
)

var allKinds = []string{KindTorch, KindCUDA, KindProton}

// matchLabels are the labels a kinds[].match may name: what resolving a pod learns.
var matchLabels = []string{"namespace", "pod", "model_name"}

// KindConfig is one entry of profile.kinds.
type KindConfig struct {
	// Match selects the pods: namespace, pod and model_name, each a value or "=~regex"
	// (anchored). Empty matches every pod.
	Match map[string]string `yaml:"match"`
	// Profiler is the kind the servers run: torch, cuda (Nsight Systems writes the files) or
	// proton.
	Profiler string `yaml:"profiler"`
	// TorchProfilerDir is the servers' torch_profiler_dir (torch only): an absolute path on the
	// pod, or an object-store URI (s3://bucket/prefix, gs://bucket/prefix), given as a console
	// link. Same template data as url_template.
	TorchProfilerDir string `yaml:"torch_profiler_dir"`
	// TraceHint, when set, replaces the sentence that says where the traces are (a template).
	TraceHint string `yaml:"trace_hint"`
}

// kind is a compiled KindConfig.
type kind struct {
	match    map[string]*regexp.Regexp
	profiler string
	dir      *template.Template
	hint     *template.Template
}

func (k kind) matches(labels map[string]string) bool {
	for name, re := range k.match {
		if !re.MatchString(labels[name]) {
			return false
		}
	}
	return true
}

// compile checks one entry. It returns every error, each naming its key inside the entry
// (configerr); the caller adds "kinds[i]".
func (kc KindConfig) compile() (kind, error) {
	k := kind{match: map[string]*regexp.Regexp{}, profiler: kc.Profiler}
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	for _, name := range sortedKeys(kc.Match) {
		if !slices.Contains(matchLabels, name) {
			add("match", "unknown label %q (one of %s)", name, strings.Join(matchLabels, ", "))
			continue
		}
		v := kc.Match[name]
		expr := regexp.QuoteMeta(v)
		if re, ok := strings.CutPrefix(v, "=~"); ok {
			expr = re
		}
		if _, err := regexp.Compile(expr); err != nil {
			add("match."+name, "%w", err)
			continue
		}
		k.match[name] = regexp.MustCompile("^(?:" + expr + ")$") // anchored, as in Prometheus
	}
	if !slices.Contains(allKinds, kc.Profiler) {
		add("profiler", "must be one of %s, got %q", strings.Join(allKinds, ", "), kc.Profiler)
	}
	if kc.TorchProfilerDir != "" {
		t, err := kc.torchProfilerDir()
		if err != nil {
			add("torch_profiler_dir", "%w", err)
		}
		k.dir = t
	}
	if kc.TraceHint != "" {
		t, err := template.New("trace_hint").Option("missingkey=error").Parse(kc.TraceHint)
		if err == nil {
			err = t.Execute(&bytes.Buffer{}, podendpoint.TemplateData("10.0.0.1:8000", "vllm-0", "default"))
		}
		if err != nil {
			add("trace_hint", "%w", err)
		}
		k.hint = t
	}
	if err := errors.Join(errs...); err != nil {
		return kind{}, err
	}
	return k, nil
}

// torchProfilerDir compiles the torch_profiler_dir template and checks what it renders.
func (kc KindConfig) torchProfilerDir() (*template.Template, error) {
	if kc.Profiler != KindTorch {
		return nil, fmt.Errorf("only for profiler: torch (with %s, vLLM writes no torch traces)", kc.Profiler)
	}
	t, err := template.New("torch_profiler_dir").Option("missingkey=error").Parse(kc.TorchProfilerDir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, podendpoint.TemplateData("10.0.0.1:8000", "vllm-0", "default")); err != nil {
		return nil, err
	}
	if _, err := traceLocation(buf.String()); err != nil {
		return nil, err
	}
	return t, nil
}

// traceLocation checks a rendered torch_profiler_dir and returns its console link for an
// object store ("" for a path on the pod).
func traceLocation(dir string) (string, error) {
	scheme, rest, isURI := strings.Cut(dir, "://")
	if !isURI {
		if !strings.HasPrefix(dir, "/") {
			return "", fmt.Errorf("must be an absolute path or an s3:// or gs:// URI, got %q", dir)
		}
		return "", nil
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return "", fmt.Errorf("%s URI without a bucket: %q", scheme, dir)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	switch scheme {
	case "s3":
		u := "https://s3.console.aws.amazon.com/s3/buckets/" + url.PathEscape(bucket)
		if prefix != "" {
			u += "?prefix=" + url.QueryEscape(prefix)
		}
		return u, nil
	case "gs":
		u := "https://console.cloud.google.com/storage/browser/" + url.PathEscape(bucket)
		if prefix != "" {
			u += "/" + (&url.URL{Path: prefix}).EscapedPath()
		}
		return u, nil
	default:
		return "", fmt.Errorf("unsupported object store %q (s3://, gs://), got %q", scheme, dir)
	}
}

// Traces says where a capture's traces are.
type Traces struct {
	Kind string
	// Where is the sentence for the report.
	Where string
	// Link is the object-store console page, when the traces go to one.
	Link string
}

// tracesFor finds the pod's kind and says where its traces land.
func (c *Config) tracesFor(t target) Traces {
	labels := map[string]string{"namespace": t.Namespace, "pod": t.Pod, "model_name": t.Model}
	render := func(tm *template.Template) string {
		var buf bytes.Buffer
		if err := tm.Execute(&buf, podendpoint.TemplateData(t.Instance, t.Pod, t.Namespace)); err != nil {
			return "(" + tm.Name() + ": " + err.Error() + ")"
		}
		return buf.String()
	}
	for _, k := range c.kinds {
		if !k.matches(labels) {
			continue
		}
		tr := Traces{Kind: k.profiler}
		if k.dir != nil {
			dir := render(k.dir)
			tr.Link, _ = traceLocation(dir)
		}
		switch {
		case k.hint != nil:
			tr.Where = render(k.hint)
		case k.profiler == KindCUDA:
			tr.Where = "vLLM wrote no trace files (profiler: cuda): Nsight Systems, which runs the vLLM server on pod " + t.Pod +
				" (nsys profile --capture-range=cudaProfilerApi), writes its report where its -o option says"
		case k.profiler == KindProton:
			tr.Where = "the Triton Proton profile of the vLLM server on pod " + t.Pod + " (profiler: proton), where its --profiler-config says"
		case k.dir != nil && tr.Link != "":
			tr.Where = render(k.dir) + ", one *.pt.trace.json.gz per worker rank: " + tr.Link
		case k.dir != nil:
			tr.Where = render(k.dir) + " on pod " + t.Pod + ", one *.pt.trace.json.gz per worker rank; open them in Perfetto"
		default:
			tr.Where = render(c.traceTmpl)
		}
		return tr
	}
	return Traces{Kind: KindTorch, Where: render(c.traceTmpl)}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
