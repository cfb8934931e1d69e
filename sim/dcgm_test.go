package sim

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// expoSeries is one sample line of a text exposition: its labels in order.
type expoSeries struct {
	names, values []string
	value         string
}

// expoFamily is a family of a text exposition as written.
type expoFamily struct {
	help, typ string
	series    []expoSeries
}

// parseExpo parses a text exposition strictly enough to compare label order: HELP, TYPE, and
// name{k="v",...} value lines (quoted values may hold commas and braces).
func parseExpo(t *testing.T, text string) map[string]*expoFamily {
	t.Helper()
	fams := map[string]*expoFamily{}
	fam := func(n string) *expoFamily {
		if fams[n] == nil {
			fams[n] = &expoFamily{}
		}
		return fams[n]
	}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
			fam(name).help = help
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(line, "# TYPE "), " ")
			fam(name).typ = typ
		default:
			name, rest, ok := strings.Cut(line, "{")
			if !ok {
				t.Fatalf("line without labels: %q", line)
			}
			var s expoSeries
			for {
				k, after, ok := strings.Cut(rest, `="`)
				if !ok {
					t.Fatalf("bad labels in %q", line)
				}
				v, err := strconv.QuotedPrefix(`"` + after)
				if err != nil {
					t.Fatalf("bad label value in %q: %v", line, err)
				}
				uq, _ := strconv.Unquote(v)
				s.names, s.values = append(s.names, strings.TrimPrefix(k, ",")), append(s.values, uq)
				rest = after[len(v)-1:]
				if strings.HasPrefix(rest, "} ") {
					s.value = strings.TrimPrefix(rest, "} ")
					break
				}
			}
			fam(name).series = append(fam(name).series, s)
		}
	}
	return fams
}

// docSample is the exposition sample of docs/gpu-facts.md marked <!-- sample: name -->.
func docSample(t *testing.T, name string) map[string]*expoFamily {
	t.Helper()
	b, err := os.ReadFile("../docs/gpu-facts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- sample: "+name+" -->\n```text\n")
	if !ok {
		t.Fatalf("docs/gpu-facts.md has no sample %q", name)
	}
	body, _, _ := strings.Cut(rest, "```")
	return parseExpo(t, body)
}

// podAttributes are the labels dcgm-exporter adds for the pod holding a GPU; a GPU no pod holds
// has none of them.
var podAttributes = []string{"container", "namespace", "pod"}

// labelShapes are the label-name sequences a sample family allows: each sample line's, and the
// same without the pod attributes (a GPU no pod holds).
func labelShapes(f *expoFamily) map[string]bool {
	out := map[string]bool{}
	for _, s := range f.series {
		out[strings.Join(s.names, ",")] = true
		idle := slices.DeleteFunc(slices.Clone(s.names), func(n string) bool { return slices.Contains(podAttributes, n) })
		out[strings.Join(idle, ",")] = true
	}
	return out
}

// gpuPod is a TP=tp pod serving the healthy load for a while, then switched to scenario.
func gpuPod(t *testing.T, tp int, scenario string) *vclock {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TensorParallelSize = tp
	cfg.PodName = "llama3-70b-5c9d7f6b8-x2k4q"
	v := newVirtual(t, cfg, "healthy")
	v.run(10 * time.Second)
	if scenario != "" {
		v.switchTo(scenario)
	}
	return v
}

func newDCGM(t *testing.T, v *vclock, opts DCGMOptions) *DCGMExporter {
	t.Helper()
	if opts.Node == "" {
		opts.Node = "gpu-h100-a7"
	}
	if opts.Namespace == "" {
		opts.Namespace = "inference"
	}
	x, err := NewDCGMExporter(v.e, opts, v.now)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func dcgmScrape(t *testing.T, x *DCGMExporter, now time.Time) map[string]*expoFamily {
	t.Helper()
	body, err := x.Exposition(now)
	if err != nil {
		t.Fatal(err)
	}
	return parseExpo(t, body)
}

// compareWithSample checks the stand-in family by family against a sample of the facts file:
// the same families, HELP and TYPE, and every series' label names in an order the sample shows.
func compareWithSample(t *testing.T, got, want map[string]*expoFamily) {
	t.Helper()
	for name, w := range want {
		g := got[name]
		if g == nil {
			t.Errorf("%s: in docs/gpu-facts.md's sample, not written by the stand-in", name)
			continue
		}
		if g.help != w.help || g.typ != w.typ {
			t.Errorf("%s: HELP %q TYPE %s, the sample has HELP %q TYPE %s", name, g.help, g.typ, w.help, w.typ)
		}
		shapes := labelShapes(w)
		for _, s := range g.series {
			if !shapes[strings.Join(s.names, ",")] {
				t.Errorf("%s: the stand-in writes labels %v, the sample none such (%v)", name, s.names, shapes)
			}
		}
	}
	for name := range got {
		if want[name] == nil {
			t.Errorf("%s: written by the stand-in, not in docs/gpu-facts.md's sample", name)
		}
	}
}

// The stand-in writes what the facts file's sample of dcgm-exporter 4.5.3-4.8.2 with the GPU
// Operator's CSV holds: every family of the default CSV, in its label order, for the GPUs a TP=2
// pod holds and for one no pod holds.
func TestDCGMStandInMatchesTheFactsSampleFamilyByFamily(t *testing.T) {
	v := gpuPod(t, 2, "gpu-stale-xid") // an XID on the gauge, so that the XID family is written
	x := newDCGM(t, v, DCGMOptions{GPUs: 3})
	v.run(5 * time.Second)
	got := dcgmScrape(t, x, v.now)
	compareWithSample(t, got, docSample(t, "dcgm-k8s"))
	for _, s := range got["DCGM_FI_DEV_SM_CLOCK"].series {
		if len(s.names) != 10 && len(s.names) != 7 { // held by the pod, or by none
			t.Errorf("SM clock series with %d labels: %v", len(s.names), s.names)
		}
	}
	if n := len(got["DCGM_FI_DEV_SM_CLOCK"].series); n != 3 {
		t.Errorf("%d SM clock series, want one per GPU (3)", n)
	}

	// The fields the CSV ships commented out, when enabled.
	opt := newDCGM(t, v, DCGMOptions{GPUs: 3, Optional: true})
	all := dcgmScrape(t, opt, v.now)
	extra := map[string]*expoFamily{}
	for name, f := range all {
		if got[name] == nil {
			extra[name] = f
		}
	}
	compareWithSample(t, extra, docSample(t, "dcgm-k8s-optional"))
}

// main's template (the exporter's own render test: hostname in lower case) starts every GPU
// series with the same labels.
func TestDCGMStandInMainFlavorWritesTheTemplatesLabels(t *testing.T) {
	v := gpuPod(t, 1, "")
	x := newDCGM(t, v, DCGMOptions{GPUs: 2, Flavor: DCGMFlavors["main"]})
	want := docSample(t, "render-test")["TEST_METRIC"].series[0].names
	want[1] = "UUID" // the test names the UUID label test-uuid
	for name, f := range dcgmScrape(t, x, v.now) {
		for _, s := range f.series {
			if !slices.Equal(s.names[:len(want)], want) {
				t.Errorf("%s: labels %v, want them to start %v", name, s.names, want)
			}
		}
	}
}

// Values as the exporter's toString writes them: int64 fields with %d, doubles with %f.
func TestDCGMStandInWritesIntegersAndDoublesAsTheExporter(t *testing.T) {
	v := gpuPod(t, 2, "")
	x := newDCGM(t, v, DCGMOptions{GPUs: 3, Optional: true})
	v.run(5 * time.Second)
	doubles := map[string]bool{"DCGM_FI_DEV_POWER_USAGE": true, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": true,
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": true, "DCGM_FI_PROF_DRAM_ACTIVE": true}
	double, integer := regexp.MustCompile(`^[0-9]+\.[0-9]{6}$`), regexp.MustCompile(`^[0-9]+$`)
	for name, f := range dcgmScrape(t, x, v.now) {
		if strings.HasSuffix(name, "_total") && f.typ == "counter" && !strings.HasSuffix(name, "_COUNT_TOTAL") {
			t.Errorf("%s: a _total suffix the CSV does not have", name)
		}
		for _, s := range f.series {
			re := integer
			if doubles[name] {
				re = double
			}
			if !re.MatchString(s.value) {
				t.Errorf("%s: value %q, want %s", name, s.value, re)
			}
		}
	}
}

// value returns the value of the family's series for GPU gpu ("" labels: any), NaN if absent.
func value(f map[string]*expoFamily, name, gpu string) float64 {
	fam := f[name]
	if fam == nil {
		return math.NaN()
	}
	for _, s := range fam.series {
		if i := slices.Index(s.names, "gpu"); i >= 0 && s.values[i] == gpu {
			v, _ := strconv.ParseFloat(s.value, 64)
			return v
		}
	}
	return math.NaN()
}

func label(f map[string]*expoFamily, name, gpu, key string) string {
	for _, s := range f[name].series {
		if i := slices.Index(s.names, "gpu"); i >= 0 && s.values[i] == gpu {
			if j := slices.Index(s.names, key); j >= 0 {
				return s.values[j]
			}
		}
	}
	return ""
}

// XID 79 on rank 1 of a TP=2 pod: the lost GPU's series vanish while its sibling's stay (it
// spins in the collective); the engine core hangs, every vllm: series frozen, until vLLM's RPC
// deadline (300 s) kills it; then the server stays down, its restarts failing on the lost GPU.
// Switching the scenario is the node's reboot: the GPU is back, its XID gone.
func TestXID79OnOneRankHangsTheTPPodThenKillsItAtTheRPCDeadline(t *testing.T) {
	v := gpuPod(t, 2, "gpu-xid79")
	x := newDCGM(t, v, DCGMOptions{GPUs: 2})
	v.run(15 * time.Second)
	before := dcgmScrape(t, x, v.now)
	if value(before, "DCGM_FI_DEV_SM_CLOCK", "1") != smClockMax || label(before, "DCGM_FI_DEV_SM_CLOCK", "1", "pod") != "llama3-70b-5c9d7f6b8-x2k4q" {
		t.Fatalf("before the fault rank 1 should be busy and held by the pod: %v", before["DCGM_FI_DEV_SM_CLOCK"].series)
	}
	v.run(10 * time.Second) // the fault at 20 s
	a := v.snap()
	after := dcgmScrape(t, x, v.now)
	for name, f := range after {
		for _, s := range f.series {
			if s.values[0] == "1" {
				t.Errorf("%s: the lost GPU 1 still reports", name)
			}
		}
	}
	if u := value(after, "DCGM_FI_DEV_GPU_UTIL", "0"); u != 100 {
		t.Errorf("rank 0 utilization %g, want ~100 (spinning in the collective)", u)
	}
	if _, ok := after["DCGM_FI_DEV_XID_ERRORS"]; ok {
		t.Error("an XID series: DCGM blanks a lost GPU, XID 79 included")
	}
	st := v.e.Stats()
	if !st.Hung || st.Down {
		t.Fatalf("engine hung %v down %v at 25 s, want hung", st.Hung, st.Down)
	}
	v.run(250 * time.Second)
	b := v.snap()
	if g := (window{a, b}).rate("vllm:generation_tokens_total"); g != 0 {
		t.Errorf("the hung engine generated %g tokens/s", g)
	}
	if v.e.Stats().Down {
		t.Fatal("down before vLLM's 300 s deadline")
	}
	v.run(60 * time.Second) // 20 s + 300 s passed
	if st := v.e.Stats(); !st.Down {
		t.Fatalf("not down 300 s after the loss: %+v", st)
	}
	down := dcgmScrape(t, x, v.now)
	if fb := value(down, "DCGM_FI_DEV_FB_USED", "0"); fb != 0 {
		t.Errorf("rank 0 holds %g MiB with the server gone", fb)
	}
	if label(down, "DCGM_FI_DEV_SM_CLOCK", "0", "pod") != "llama3-70b-5c9d7f6b8-x2k4q" {
		t.Error("a crash-looping pod still holds its GPUs")
	}
	v.run(10 * time.Minute)
	if !v.e.Stats().Down {
		t.Error("restarted although the GPU is still lost")
	}

	v.switchTo("healthy")
	v.run(5 * time.Second)
	rebooted := dcgmScrape(t, x, v.now)
	if value(rebooted, "DCGM_FI_DEV_SM_CLOCK", "1") != smClockMax {
		t.Errorf("after the reboot GPU 1 should report, busy: %v", rebooted["DCGM_FI_DEV_SM_CLOCK"])
	}
	if v.e.Stats().Down {
		t.Error("the server is still down after the switch")
	}
}

// With TP = 1 vLLM's single-process executor has no deadline: a lost GPU hangs the engine for good.
func TestXID79WithoutTensorParallelismHangsForGood(t *testing.T) {
	v := gpuPod(t, 1, "gpu-xid79")
	v.run(20*time.Second + 10*time.Minute)
	if st := v.e.Stats(); !st.Hung || st.Down {
		t.Fatalf("TP=1 after 10 minutes: hung %v down %v, want hung and up", st.Hung, st.Down)
	}
}

// gpuFleet is three TP=1 pods under a fleet scenario, each in virtual time of its own.
func gpuFleet(t *testing.T, scenario string) []*vclock {
	t.Helper()
	engines := make([]*Engine, 3)
	clocks := make([]*vclock, 3)
	for i := range engines {
		cfg := DefaultConfig()
		cfg.Seed, cfg.PodName, cfg.Start = uint64(1+i), "vllm-"+strconv.Itoa(i), epoch
		e, err := NewEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		engines[i], clocks[i] = e, &vclock{t: t, e: e, now: epoch}
	}
	if err := NewFleet(engines...).Apply(scenario, true, epoch); err != nil {
		t.Fatal(err)
	}
	return clocks
}

// Thermal throttling on one of three pods: its SM clock drops to 64% at 87 C while it serves the
// same load as its siblings, and its inter-token latency rises ~1.9x against theirs (each step
// 1.56x, and the slower steps keep more requests in the batch).
func TestThermalThrottlingOnOneOfThreePodsRaisesItsITLAgainstItsSiblings(t *testing.T) {
	clocks := gpuFleet(t, "gpu-thermal-throttle")
	xs := make([]*DCGMExporter, 3)
	for i, v := range clocks {
		xs[i] = newDCGM(t, v, DCGMOptions{GPUs: 1, Node: "gpu-node-" + strconv.Itoa(i)})
	}
	var itl [3]float64
	var clock, temp [3]float64
	for i, v := range clocks {
		v.run(40 * time.Second) // throttled from 30 s on
		a := v.snap()
		v.run(60 * time.Second)
		itl[i] = (window{a, v.snap()}).mean("vllm:inter_token_latency_seconds")
		s := dcgmScrape(t, xs[i], v.now)
		clock[i], temp[i] = value(s, "DCGM_FI_DEV_SM_CLOCK", "0"), value(s, "DCGM_FI_DEV_GPU_TEMP", "0")
	}
	if clock[0] != 1267 || temp[0] != 87 {
		t.Errorf("throttled pod 0: SM clock %g MHz at %g C, want 1267 at 87", clock[0], temp[0])
	}
	for i := 1; i < 3; i++ {
		if clock[i] != smClockMax || temp[i] >= 87 {
			t.Errorf("sibling %d: SM clock %g at %g C, want %d, cooler", i, clock[i], temp[i], smClockMax)
		}
		// The step takes 1/0.64 = 1.56x as long; slower steps also keep more requests in the batch.
		if r := itl[0] / itl[i]; r < 1.5 || r > 2.3 {
			t.Errorf("ITL of the throttled pod %.4fs is %.2fx sibling %d's (%.4fs), want ~1.6-2x", itl[0], r, i, itl[i])
		}
	}
}

// The hard negative: a pod the router sends nothing has its GPUs idle, their clock down at
// GPU_IDLE, and no inter-token latency at all; its siblings run at full clock.
func TestAnIdlePodsGPUClocksDownWithoutThrottling(t *testing.T) {
	clocks := gpuFleet(t, "gpu-idle-pod")
	for i, v := range clocks {
		x := newDCGM(t, v, DCGMOptions{GPUs: 1, Node: "gpu-node-" + strconv.Itoa(i)})
		v.run(60 * time.Second)
		s := dcgmScrape(t, x, v.now)
		want, util := float64(smClockMax), 97.0
		if i == 0 {
			want, util = smClockIdle, 0
		}
		if c, u := value(s, "DCGM_FI_DEV_SM_CLOCK", "0"), value(s, "DCGM_FI_DEV_GPU_UTIL", "0"); c != want || u != util {
			t.Errorf("pod %d: SM clock %g, utilization %g; want %g, %g", i, c, u, want, util)
		}
		if temp := value(s, "DCGM_FI_DEV_GPU_TEMP", "0"); temp >= 87 {
			t.Errorf("pod %d at %g C: not at a thermal limit", i, temp)
		}
	}
}

// A failed row remap: XID 64 and the failure flag on rank 0 from 20 s on; vLLM serves on.
func TestARowRemapFailureShowsOnTheGaugesAndVLLMServesOn(t *testing.T) {
	v := gpuPod(t, 2, "gpu-row-remap-failure")
	x := newDCGM(t, v, DCGMOptions{GPUs: 2})
	v.run(15 * time.Second)
	s := dcgmScrape(t, x, v.now)
	if f := value(s, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "0"); f != 0 {
		t.Errorf("remap failure %g before the fault", f)
	}
	if _, ok := s["DCGM_FI_DEV_XID_ERRORS"]; ok {
		t.Error("an XID series before any XID (4.5.3-4.8.2 writes none)")
	}
	v.run(10 * time.Second)
	a := v.snap()
	s = dcgmScrape(t, x, v.now)
	if f := value(s, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "0"); f != 1 {
		t.Errorf("remap failure %g after the fault, want 1", f)
	}
	if x, code := value(s, "DCGM_FI_DEV_XID_ERRORS", "0"), label(s, "DCGM_FI_DEV_XID_ERRORS", "0", "err_code"); x != 64 || code != "64" {
		t.Errorf("XID %g err_code %q, want 64", x, code)
	}
	if m := label(s, "DCGM_FI_DEV_XID_ERRORS", "0", "err_msg"); m != "ECC page retirement or row remapper recording failure" {
		t.Errorf("err_msg %q", m)
	}
	v.run(30 * time.Second)
	if g := (window{a, v.snap()}).rate("vllm:generation_tokens_total"); g < 300 {
		t.Errorf("generation %.0f tokens/s after a remap failure: vLLM serves on", g)
	}
	// The XID stays on the gauge after the scenario ends (the last XID, until the exporter restarts).
	v.switchTo("healthy")
	v.run(10 * time.Minute)
	if x := value(dcgmScrape(t, x, v.now), "DCGM_FI_DEV_XID_ERRORS", "0"); x != 64 {
		t.Errorf("XID %g ten minutes later, want the sticky 64", x)
	}
}

// The same XID again on a crash-looping pod: the gauge shows XID 95 from the first fault on and
// never changes (a repeat is invisible on it), DCGM_EXP_XID_ERRORS_COUNT counts each within its
// window; the server dies with each fault and starts again on the same GPU.
func TestARepeatedXIDIsCountedOnlyByTheXIDCount(t *testing.T) {
	v := gpuPod(t, 1, "gpu-xid-repeat")
	x := newDCGM(t, v, DCGMOptions{GPUs: 1, Optional: true})
	count := func(s map[string]*expoFamily) float64 {
		for _, r := range s["DCGM_EXP_XID_ERRORS_COUNT"].series {
			if i := slices.Index(r.names, "xid"); i >= 0 && r.values[i] == "95" {
				n, _ := strconv.ParseFloat(r.value, 64)
				return n
			}
		}
		return 0
	}
	v.run(25 * time.Second)
	first := dcgmScrape(t, x, v.now)
	v.run(60 * time.Second)
	s := dcgmScrape(t, x, v.now)
	for i, sc := range []map[string]*expoFamily{first, s} {
		if g := value(sc, "DCGM_FI_DEV_XID_ERRORS", "0"); g != 95 {
			t.Errorf("scrape %d: XID gauge %g, want 95", i, g)
		}
	}
	if c1, c3 := count(first), count(s); c1 != 1 || c3 != 3 {
		t.Errorf("XID count %g after the first fault, %g after the third; want 1 and 3", c1, c3)
	}
	if r := v.e.life.restarts; r < 2 {
		t.Errorf("%d restarts after three faults, want 2 or more", r)
	}
	v.run(6 * time.Minute)
	if c := count(dcgmScrape(t, x, v.now)); c > 10 {
		t.Errorf("XID count %g: the window (5 min) holds at most 10 faults 30 s apart", c)
	}
}

// An old XID stays: started on gpu-stale-xid, the exporter shows XID 48 on rank 1 from its
// first scrape, and nothing happens. Up to 4.7 a GPU without XIDs writes a 0 series; 4.8 none.
func TestAStaleXIDIsOnTheGaugeFromTheFirstScrape(t *testing.T) {
	v := gpuPod(t, 2, "gpu-stale-xid")
	x := newDCGM(t, v, DCGMOptions{GPUs: 2})
	first := dcgmScrape(t, x, v.now)
	if xid := value(first, "DCGM_FI_DEV_XID_ERRORS", "1"); xid != 48 {
		t.Errorf("first scrape: XID %g on GPU 1, want the stale 48", xid)
	}
	if xid := value(first, "DCGM_FI_DEV_XID_ERRORS", "0"); !math.IsNaN(xid) {
		t.Errorf("GPU 0 has had no XID, but writes %g", xid)
	}
	old := newDCGM(t, v, DCGMOptions{GPUs: 2, Flavor: DCGMFlavors["4.7-gpu-operator"]})
	s := dcgmScrape(t, old, v.now)
	if xid, msg := value(s, "DCGM_FI_DEV_XID_ERRORS", "0"), label(s, "DCGM_FI_DEV_XID_ERRORS", "0", "err_msg"); xid != 0 || msg != "No Error" {
		t.Errorf("4.7: GPU 0 XID %g %q, want 0 No Error", xid, msg)
	}
}

// A collector error fails the whole scrape with 500, as dcgm-exporter's server does.
func TestACollectorErrorFailsTheWholeScrape(t *testing.T) {
	v := gpuPod(t, 1, "")
	x := newDCGM(t, v, DCGMOptions{GPUs: 1})
	srv := httptest.NewServer(x)
	defer srv.Close()
	get := func() (int, string) {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || !strings.Contains(body, "# TYPE DCGM_FI_DEV_SM_CLOCK gauge") {
		t.Fatalf("healthy scrape: %d %q", code, body)
	}
	x.SetCollectorError(errors.New("DCGM: Host engine connection invalid/disconnected"))
	if code, body := get(); code != 500 || body != "internal server error\n" {
		t.Errorf("failing collector: %d %q, want 500 internal server error", code, body)
	}
}

// Every GPU scenario is registered and described; the pod holds at most as many GPUs as the node has.
func TestGPUScenariosAreRegistered(t *testing.T) {
	for _, n := range []string{"gpu-xid79", "gpu-throttle", "gpu-row-remap-failure", "gpu-xid-repeat", "gpu-stale-xid"} {
		sc, err := LookupScenario(n)
		if err != nil || sc.Description == "" || sc.GPU == (GPUFault{}) {
			t.Errorf("%s: %v %+v", n, err, sc)
		}
	}
	for _, n := range []string{"gpu-thermal-throttle", "gpu-idle-pod"} {
		if fs, ok := FleetScenarios[n]; !ok || fs.Description == "" {
			t.Errorf("fleet scenario %s missing", n)
		}
	}
	v := gpuPod(t, 4, "")
	if _, err := NewDCGMExporter(v.e, DCGMOptions{GPUs: 2}, v.now); err == nil {
		t.Error("a TP=4 pod on a node of 2 GPUs")
	}
}
