package profile

import (
	"context"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/store"
)

func TestEachDeploymentsProfilerKindSaysWhereItsTracesAre(t *testing.T) {
	c, err := loadConfig("testdata/config/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		tg        target
		kind      string
		where     string
		link      string
		notInText string
	}{
		{"a canary pod writing to S3 gets the console link", target{Namespace: "llm", Pod: "canary-0", Model: "meta-llama/x"}, KindTorch,
			"s3://traces-bucket/vllm/canary-0, one *.pt.trace.json.gz per worker rank: https://s3.console.aws.amazon.com/s3/buckets/traces-bucket?prefix=vllm%2Fcanary-0%2F",
			"https://s3.console.aws.amazon.com/s3/buckets/traces-bucket?prefix=vllm%2Fcanary-0%2F", ""},
		{"a cuda deployment says nsys writes the files, not the trace dir", target{Namespace: "llm", Pod: "vllm-0", Model: "meta-llama/x"}, KindCUDA,
			"vLLM wrote no trace files (profiler: cuda): Nsight Systems, which runs the vLLM server on pod vllm-0 (nsys profile --capture-range=cudaProfilerApi), writes its report where its -o option says",
			"", "torch_profiler_dir"},
		{"a local torch_profiler_dir is a path on the pod", target{Namespace: "local", Pod: "vllm-3"}, KindTorch,
			"/traces/vllm-3 on pod vllm-3, one *.pt.trace.json.gz per worker rank; open them in Perfetto", "", ""},
		{"a GCS torch_profiler_dir is a console link", target{Namespace: "gcp", Pod: "vllm-1"}, KindTorch,
			"gs://bucket/runs/gcp, one *.pt.trace.json.gz per worker rank: https://console.cloud.google.com/storage/browser/bucket/runs/gcp/",
			"https://console.cloud.google.com/storage/browser/bucket/runs/gcp/", ""},
		{"proton", target{Namespace: "triton", Pod: "p"}, KindProton,
			"the Triton Proton profile of the vLLM server on pod p (profiler: proton), where its --profiler-config says", "", "torch_profiler_dir"},
		{"a trace_hint replaces the sentence", target{Namespace: "custom", Pod: "c-0"}, KindCUDA, "nsys reports in /nsys on c-0", "", ""},
		{"a pod no entry matches is torch with trace_dir_hint", target{Namespace: "other", Pod: "vllm-9", Model: "qwen"}, KindTorch, "/traces on vllm-9", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.tracesFor(tc.tg)
			if got.Kind != tc.kind || got.Where != tc.where || got.Link != tc.link {
				t.Fatalf("got  %+v\nwant {Kind:%s Where:%s Link:%s}", got, tc.kind, tc.where, tc.link)
			}
			if tc.notInText != "" && strings.Contains(got.Where, tc.notInText) {
				t.Fatalf("%q mentions %s", got.Where, tc.notInText)
			}
		})
	}
}

func TestACudaCapturesReportSaysNsysWroteTheFiles(t *testing.T) {
	vllm := startSim(t, 0)
	cfg := testConfig()
	cfg.Kinds = []KindConfig{{Match: map[string]string{"pod": "=~vllm-.*"}, Profiler: KindCUDA}}
	s := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if txt := rep.String(); !strings.Contains(txt, "traces: vLLM wrote no trace files (profiler: cuda): Nsight Systems") || strings.Contains(txt, "torch_profiler_dir") {
		t.Fatalf("report:\n%s", txt)
	}
}
