package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/kube"
)

// The mapping against a real Prometheus scraping a stand-in kube-state-metrics (the exposition
// of testenv.KSMRelease) and a stand-in KEDA operator: one namespace per situation, each with
// the nearest situation where a fact must not be claimed beside it.

func ptr(f float64) *float64 { return &f }

func ready() testenv.KSMPod { return testenv.KSMPod{Ready: true} }

// cluster is every situation of the test, namespace by namespace.
func cluster() (testenv.KSMState, []testenv.KEDAScaler) {
	var s testenv.KSMState
	add := func(d testenv.KSMState) { s = s.Add(d) }
	limited := map[string]string{"AbleToScale": "True", "ScalingActive": "True", "ScalingLimited": "True"}
	free := map[string]string{"AbleToScale": "True", "ScalingActive": "True", "ScalingLimited": "False"}
	waiting := func(target, now float64) []testenv.KSMHPAMetric {
		return []testenv.KSMHPAMetric{{Name: "vllm_num_requests_waiting", TargetType: "average", Target: target, Current: ptr(now)}}
	}

	// ceiling: three ready pods, the HPA at its max of 3 and limited; one pod restarted after an
	// OOM kill. Beside it, another Deployment's pod Pending and unschedulable for 10 minutes:
	// not this workload's.
	oom := ready()
	oom.Name, oom.Restarts, oom.LastTerminatedReason, oom.LastTerminatedAgo, oom.LastExitCode = "llama-7d9c5f-oom", 2, "OOMKilled", 4*time.Minute, 137
	add(testenv.KSMDeployment("ceiling", "llama", ready(), ready(), oom))
	add(testenv.KSMDeployment("ceiling", "embedder", testenv.KSMPod{Phase: "Pending", Unschedulable: true, UnschedulableFor: 10 * time.Minute, Age: 10 * time.Minute}))
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "ceiling", Name: "llama", TargetKind: "Deployment", TargetName: "llama",
		Min: 1, Max: 3, Current: 3, Desired: 3, Conditions: limited, Metrics: waiting(10, 46.7)})

	// scaling: the HPA asks for 8 of up to 8 while 4 pods start (two pulling the image, two
	// loading weights); ScalingLimited true from a scale-up rate limit, not the ceiling.
	add(testenv.KSMDeployment("scaling", "llama", ready(), ready(), ready(), ready(),
		testenv.KSMPod{Phase: "Pending", Waiting: "ContainerCreating", Age: 90 * time.Second},
		testenv.KSMPod{Phase: "Pending", Waiting: "ContainerCreating", Age: 90 * time.Second},
		testenv.KSMPod{Age: 3 * time.Minute}, testenv.KSMPod{Age: 3 * time.Minute}))
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "scaling", Name: "llama", TargetKind: "Deployment", TargetName: "llama",
		Min: 2, Max: 8, Current: 8, Desired: 8, Conditions: limited, Metrics: waiting(10, 31)})

	// unschedulable: two pods Pending for 10 minutes, no node fits them; one crash-looping.
	add(testenv.KSMDeployment("unschedulable", "llama", ready(), ready(),
		testenv.KSMPod{Phase: "Pending", Unschedulable: true, UnschedulableFor: 10 * time.Minute, Age: 10 * time.Minute},
		testenv.KSMPod{Phase: "Pending", Unschedulable: true, UnschedulableFor: 8 * time.Minute, Age: 8 * time.Minute},
		testenv.KSMPod{Waiting: "CrashLoopBackOff", Restarts: 5, Age: 10 * time.Minute}))
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "unschedulable", Name: "llama", TargetKind: "Deployment", TargetName: "llama",
		Min: 1, Max: 6, Current: 5, Desired: 6, Conditions: free, Metrics: waiting(10, 20)})

	// manual: no HPA targets this Deployment (another's does).
	add(testenv.KSMDeployment("manual", "llama", ready(), ready()))
	add(testenv.KSMDeployment("manual", "other", ready()))
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "manual", Name: "other", TargetKind: "Deployment", TargetName: "other",
		Min: 1, Max: 2, Current: 1, Desired: 1, Conditions: free})

	// keda: a ScaledObject's HPA on an external metric that KEDA reads from Prometheus.
	add(testenv.KSMDeployment("keda", "llama", ready(), ready()))
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "keda", Name: "keda-hpa-llama", TargetKind: "Deployment", TargetName: "llama",
		Min: 1, Max: 10, Current: 2, Desired: 2, Conditions: free,
		Metrics: []testenv.KSMHPAMetric{{Name: "s0-prometheus", TargetType: "average", Target: 50, Current: ptr(42)}}})
	keda := []testenv.KEDAScaler{{Namespace: "keda", ScaledObject: "llama", Scaler: "prometheusScaler", Metric: "s0-prometheus", Value: 84}}

	// lws: a LeaderWorkerSet of two groups: the leaders are its StatefulSet's pods, the workers
	// their groups' StatefulSets'; the pod label names it (--metric-labels-allowlist).
	lwsLabel := map[string]string{"leaderworkerset.sigs.k8s.io/name": "big-llama"}
	for g := range 2 {
		s.Pods = append(s.Pods,
			testenv.KSMPod{Namespace: "lws", Name: fmt.Sprintf("big-llama-%d", g), Node: "gpu-a", OwnerKind: "StatefulSet", OwnerName: "big-llama",
				Ready: true, Age: time.Hour, Labels: lwsLabel},
			testenv.KSMPod{Namespace: "lws", Name: fmt.Sprintf("big-llama-%d-1", g), Node: "gpu-b", OwnerKind: "StatefulSet",
				OwnerName: fmt.Sprintf("big-llama-%d", g), Ready: true, Age: time.Hour, Labels: lwsLabel})
	}
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "lws", Name: "big-llama", TargetKind: "LeaderWorkerSet", TargetName: "big-llama",
		TargetAPIVersion: "leaderworkerset.x-k8s.io/v1", Min: 1, Max: 2, Current: 2, Desired: 2, Conditions: limited})
	// lws-unlabelled: the same without the pod label: the HPA on the LeaderWorkerSet names it.
	s.Pods = append(s.Pods, testenv.KSMPod{Namespace: "lws-unlabelled", Name: "small-llama-0", Node: "gpu-c", OwnerKind: "StatefulSet",
		OwnerName: "small-llama", Ready: true, Age: time.Hour})
	s.HPAs = append(s.HPAs, testenv.KSMHPA{Namespace: "lws-unlabelled", Name: "small-llama", TargetKind: "LeaderWorkerSet", TargetName: "small-llama",
		TargetAPIVersion: "leaderworkerset.x-k8s.io/v1", Min: 1, Max: 4, Current: 1, Desired: 1, Conditions: free})
	// statefulset: a plain StatefulSet with no HPA.
	s.Pods = append(s.Pods, testenv.KSMPod{Namespace: "statefulset", Name: "plain-0", Node: "gpu-d", OwnerKind: "StatefulSet",
		OwnerName: "plain", Ready: true, Age: time.Hour})
	// bare: a pod without a controller.
	s.Pods = append(s.Pods, testenv.KSMPod{Namespace: "bare", Name: "solo", Node: "gpu-e", Ready: true, Age: time.Hour})
	return s, keda
}

// asker sends each query alone to the Prometheus at url, evaluated at at.
func asker(t *testing.T, url string, at time.Time) kube.Asker { return testenv.Asker(t, url, at) }

// scraped starts a real Prometheus scraping the stand-in kube-state-metrics (twice, under two
// jobs, as two replicas or a second scrape config would: every series duplicated) and KEDA, and
// waits until it holds every namespace's series.
func scraped(t *testing.T) *testenv.PromServer {
	state, keda := cluster()
	ksm := testenv.ServeExposition(t, state.Exposition)
	kedaSrv := testenv.ServeExposition(t, func(time.Time) string { return testenv.KEDAExposition(keda) })
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: []testenv.Target{
		{Addr: ksm.Addr, Job: "kube-state-metrics"}, {Addr: ksm.Addr, Job: "ksm-shadow"}, {Addr: kedaSrv.Addr, Job: "keda-operator"},
	}})
	client, _ := api.NewClient(api.Config{Address: prom.URL})
	p := v1.NewAPI(client)
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape the stand-in exporters", func() bool {
		v, _, _, err := p.Query(context.Background(), `count(count by (job) (kube_pod_owner)) == 2 and on () count(keda_scaler_metrics_value) > 0`, time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 1
	})
	return prom
}

func TestLookupMapsPodsToWorkloadsAndAutoscalersInARealPrometheus(t *testing.T) {
	prom := scraped(t)
	at := time.Now()
	c := &kube.Config{}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	look := func(ns, pod string) *kube.Report {
		return c.Lookup(context.Background(), asker(t, prom.URL, at), kube.PodRef{Namespace: ns, Name: pod}, at, 5*time.Minute)
	}
	num := func(f *kube.Facts, name string) string {
		if v := f.Number(name); v != nil {
			return fmt.Sprintf("%g", *v)
		}
		return "nil"
	}
	// want lists facts as name=value (a number, nil, or a label value); for durations, name≈seconds
	// within a minute (the stand-in writes times as of its scrape).
	check := func(t *testing.T, r *kube.Report, want ...string) {
		t.Helper()
		if len(r.Problems) > 0 {
			t.Errorf("queries failed: %v", r.Problems)
		}
		f := r.Facts()
		for _, w := range want {
			if name, secs, ok := strings.Cut(w, "≈"); ok {
				v := f.Number(name)
				var s float64
				fmt.Sscan(secs, &s)
				if v == nil || *v < s-60 || *v > s+60 {
					t.Errorf("%s = %s, want about %s s", name, num(f, name), secs)
				}
				continue
			}
			name, val, _ := strings.Cut(w, "=")
			got := f.Label(name)
			if !isLabel(name) {
				got = num(f, name)
			}
			if got != val {
				t.Errorf("%s = %q, want %q", name, got, val)
			}
		}
		if t.Failed() {
			t.Logf("facts: %+v %+v\nmissing: %s", f.Numbers, f.Labels, r.Missing)
		}
	}

	t.Run("an HPA at its ceiling, a restarted pod, and another Deployment's unschedulable pod not counted", func(t *testing.T) {
		r := look("ceiling", "llama-7d9c5f-oom")
		check(t, r,
			"kube_found=1", "kube_namespace=ceiling", "kube_workload_kind=Deployment", "kube_workload=llama", "kube_workload_ref=deployment/llama",
			"kube_node=gpu-node-2", "kube_pod_place=deployment/llama, node gpu-node-2",
			"kube_hpa_found=1", "kube_hpa=llama", "kube_scaledobject=", "kube_hpa_count=1", "kube_hpa_min=1", "kube_hpa_max=3", "kube_hpa_current=3", "kube_hpa_desired=3",
			"kube_hpa_limited=1", "kube_hpa_active=1", "kube_hpa_able=1",
			"kube_hpa_metric=vllm_num_requests_waiting", "kube_hpa_metric_type=average", "kube_hpa_target=10", "kube_hpa_reading=46.7",
			"kube_hpa_signal=it scales on vllm_num_requests_waiting, which it reads as 46.7 per pod now against a target of 10 per pod",
			"kube_pods=3", "kube_ready=3", "kube_pending=0", "kube_unschedulable=0", "kube_unschedulable_for=nil", "kube_starting=0", "kube_failing=0",
			"kube_restarts=2", "kube_restart_reason=OOMKilled", "kube_last_exit_code=137", "kube_missing=")
		// Over the window the counter did not move (0), unless Prometheus holds one sample only
		// (no increase: unknown, and the sentence leaves the window out).
		if s := r.Facts().Label("kube_restarts_summary"); !strings.HasPrefix(s, "kube-state-metrics: pod llama-7d9c5f-oom restarted ") ||
			!strings.HasSuffix(s, "2 times since it was created); container vllm last terminated: OOMKilled (exit code 137).") &&
				!strings.HasSuffix(s, "2 times since it was created; container vllm last terminated: OOMKilled (exit code 137).") {
			t.Errorf("summary %q", s)
		}
	})
	t.Run("an alert without a namespace: the pod's series name it", func(t *testing.T) {
		check(t, look("", "llama-7d9c5f-oom"), "kube_found=1", "kube_namespace=ceiling", "kube_workload_ref=deployment/llama", "kube_hpa_max=3")
	})
	t.Run("an alert without a namespace, and pods of its name in several: none is guessed", func(t *testing.T) {
		r := look("", "llama-7d9c5f-0")
		check(t, r, "kube_found=0", "kube_workload=")
		if !strings.Contains(r.Missing, "pods named llama-7d9c5f-0 in 5 namespaces (ceiling, keda, manual, scaling, unschedulable), and the alert names none") {
			t.Errorf("missing: %q", r.Missing)
		}
	})
	// An alert's label that carried invalid UTF-8 reaches the responder with U+FFFD in its place:
	// the lookup still runs (Prometheus refuses U+FFFD raw in a string), and finds the pod by what
	// is left of its name, or says that several match.
	t.Run("a pod name that lost a character to invalid UTF-8: the pod found by what is left", func(t *testing.T) {
		r := look("ceiling", "llama-7d9c5f-o\uFFFDm")
		check(t, r, "kube_found=1", "kube_workload_ref=deployment/llama", "kube_hpa_max=3", "kube_restarts=2", "kube_restart_reason=OOMKilled")
		if r.Pod.Name != "llama-7d9c5f-oom" {
			t.Errorf("pod %q; want the series' name llama-7d9c5f-oom", r.Pod.Name)
		}
	})
	t.Run("a namespace that lost a character: the pod's series name it", func(t *testing.T) {
		r := look("ceil\uFFFDng", "llama-7d9c5f-oom")
		check(t, r, "kube_found=1", "kube_namespace=ceiling", "kube_hpa_max=3")
	})
	t.Run("a lost character that several pods' names match: none is guessed, no restarts added up", func(t *testing.T) {
		r := look("scaling", "llama-7d9c5f-\uFFFD")
		check(t, r, "kube_found=0", "kube_workload=", "kube_restarts=nil")
		if !strings.Contains(r.Missing, "lost characters to invalid UTF-8, and 8 pods match what is left") {
			t.Errorf("missing: %q", r.Missing)
		}
	})
	t.Run("an HPA scaling up, its new pods starting for minutes", func(t *testing.T) {
		check(t, look("scaling", "llama-7d9c5f-0"),
			"kube_hpa_current=8", "kube_hpa_desired=8", "kube_hpa_max=8", "kube_pods=8", "kube_ready=4", "kube_pending=2",
			"kube_starting=4", "kube_starting_for≈180", "kube_starting_reason=ContainerCreating", "kube_unschedulable=0", "kube_failing=0")
	})
	t.Run("pods unschedulable for minutes and a crash-looping one", func(t *testing.T) {
		check(t, look("unschedulable", "llama-7d9c5f-0"),
			"kube_pods=5", "kube_ready=2", "kube_pending=2", "kube_unschedulable=2", "kube_unschedulable_for≈600",
			"kube_unschedulable_pod=llama-7d9c5f-2", "kube_starting=0", "kube_failing=1", "kube_failing_reason=CrashLoopBackOff",
			"kube_hpa_limited=0", "kube_hpa_desired=6", "kube_hpa_current=5")
	})
	t.Run("no HPA targets the workload (another's HPA in the namespace is not its)", func(t *testing.T) {
		check(t, look("manual", "llama-7d9c5f-1"),
			"kube_workload=llama", "kube_hpa_found=0", "kube_hpa_count=0", "kube_hpa=", "kube_hpa_max=nil", "kube_pods=2", "kube_ready=2")
	})
	t.Run("a KEDA ScaledObject's HPA names its scaler and what it reads", func(t *testing.T) {
		check(t, look("keda", "llama-7d9c5f-0"),
			"kube_hpa=keda-hpa-llama", "kube_scaledobject=llama", "kube_hpa_metric=s0-prometheus", "kube_hpa_source=KEDA ScaledObject llama, prometheus scaler",
			"kube_hpa_source_reading=84", "kube_hpa_reading=42", "kube_hpa_target=50",
			"kube_hpa_signal=it scales on s0-prometheus (from KEDA ScaledObject llama, prometheus scaler, which reads 84), which it reads as 42 per pod now against a target of 50 per pod")
	})
	t.Run("a LeaderWorkerSet named by its pods' label: leader and worker pods both its", func(t *testing.T) {
		check(t, look("lws", "big-llama-1"),
			"kube_workload_kind=LeaderWorkerSet", "kube_workload=big-llama", "kube_workload_ref=leaderworkerset/big-llama",
			"kube_hpa=big-llama", "kube_hpa_current=2", "kube_hpa_max=2", "kube_pods=4", "kube_ready=4", "kube_node=gpu-a")
	})
	t.Run("a LeaderWorkerSet without the label is named by the HPA that targets it", func(t *testing.T) {
		check(t, look("lws-unlabelled", "small-llama-0"),
			"kube_workload_kind=LeaderWorkerSet", "kube_workload=small-llama", "kube_hpa=small-llama", "kube_hpa_max=4", "kube_pods=1")
	})
	t.Run("a StatefulSet without an HPA stays a StatefulSet", func(t *testing.T) {
		check(t, look("statefulset", "plain-0"), "kube_workload_kind=StatefulSet", "kube_workload_ref=statefulset/plain", "kube_hpa_found=0")
	})
	t.Run("a pod without a controller has no workload", func(t *testing.T) {
		r := look("bare", "solo")
		check(t, r, "kube_found=1", "kube_workload=", "kube_hpa_found=nil", "kube_pods=nil", "kube_node=gpu-e")
		if !strings.Contains(r.Missing, "has no controller") {
			t.Errorf("missing: %q", r.Missing)
		}
	})
	t.Run("a pod kube-state-metrics does not know", func(t *testing.T) {
		r := look("ceiling", "gone-0")
		check(t, r, "kube_found=0", "kube_workload=", "kube_hpa_found=nil")
		if !strings.Contains(r.Missing, "kube-state-metrics has no pod ceiling/gone-0") {
			t.Errorf("missing: %q", r.Missing)
		}
	})
	t.Run("a namespace kube-state-metrics has no series for", func(t *testing.T) {
		r := look("elsewhere", "vllm-0")
		check(t, r, "kube_found=0")
		if !strings.Contains(r.Missing, "no kube-state-metrics series for namespace elsewhere") {
			t.Errorf("missing: %q", r.Missing)
		}
	})
	t.Run("the selector narrows every query to one scrape job", func(t *testing.T) {
		for _, tc := range []struct {
			selector string
			found    string
		}{{`job="kube-state-metrics"`, "1"}, {`job="nobody"`, "0"}} {
			sc := &kube.Config{}
			sc.SetDefaults()
			sc.Selector = tc.selector
			if err := sc.Validate(); err != nil {
				t.Fatal(err)
			}
			r := sc.Lookup(context.Background(), asker(t, prom.URL, at), kube.PodRef{Namespace: "ceiling", Name: "llama-7d9c5f-0"}, at, 5*time.Minute)
			check(t, r, "kube_found="+tc.found)
			if tc.found == "1" {
				check(t, r, "kube_hpa_max=3", "kube_pods=3")
			}
			for name, q := range r.Queries {
				if strings.HasPrefix(q, "kube_") && !strings.Contains(q, tc.selector) {
					t.Errorf("query %s lacks the selector: %s", name, q)
				}
			}
		}
	})
}

func isLabel(name string) bool {
	for _, f := range kube.Names() {
		if f.Name == name {
			return f.Label
		}
	}
	panic("no fact " + name)
}
