// Command vllm-sim is a stand-in for a vLLM OpenAI-compatible server, for
// demos, end-to-end tests and benchmarks of the responder. Inside runs a model
// of vLLM's API server process and V1 engine core in real time: the API server
// accepts, tokenizes (on one event-loop core) and answers requests and serves
// /metrics; the engine core schedules them (continuous batching limited by
// --max-num-seqs and --max-num-batched-tokens, chunked prefill, a KV block
// pool of --num-gpu-blocks x --block-size tokens, preemption by recompute,
// LoRA slots, async KV loads, speculative decoding), fed by a synthetic load
// (Poisson arrivals, lognormal prompt and output lengths, client timeouts).
// Every metric is produced by that model, never written directly: the
// scenarios change the load or the server's state (a hang, a sleep, a crash),
// not the numbers.
//
// Usage:
//
//	vllm-sim [flags]
//
// Flags:
//
//	--listen ADDR[,ADDR...]       address to serve on (default 127.0.0.1:8000; :0 picks a port, logged as listen_addr);
//	                              several addresses serve several pods of the model, one engine each (seeds
//	                              --seed, --seed+1, ...), switched together by /admin/fleet
//	--model-name NAME             served model name, the model_name label (default meta-llama/Llama-3.1-8B-Instruct)
//	--scenario NAME               initial load of every pod: a pod scenario or a fleet scenario (lists below) (default healthy)
//	--arrival-rate R              override the initial scenario's arrival rate, requests/s (default: the scenario's)
//	--seed N                      RNG seed; the same seed and load give the same engine behaviour (default 1)
//	--max-num-seqs N              cap on the running batch (default 256)
//	--max-num-batched-tokens N    token budget per engine step (default 2048)
//	--num-gpu-blocks N            KV cache blocks (default 14000)
//	--block-size N                tokens per KV block (default 16)
//	--max-model-len N             longest prompt+output, also the top of the token histograms (default 8192)
//	--gpu-memory-utilization F    only reported in vllm:cache_config_info (default 0.9)
//	--enable-prefix-caching       model prefix cache hits (default true)
//	--step-base D                 fixed cost of an engine step (default 15ms)
//	--per-seq D                   cost per scheduled request (default 50us)
//	--per-prefill-token D         compute cost per prefill (or draft) token (default 25us)
//	--per-context-token D         memory-bandwidth cost per token of context read by the batch (default 700ns)
//	--metric-names new|legacy|both  legacy emits vllm:gpu_cache_usage_perc, vllm:time_per_output_token_seconds
//	                              and vllm:gpu_prefix_cache_* instead of the current names (vLLM before 0.9.2);
//	                              both emits the old and the new names at once (0.9.2 to 0.11) (default new)
//	--max-num-queued-reqs N       the API server refuses (503, vllm:admission_rejections_total{reason=
//	                              "max_num_queued_reqs"}) a request that would make more than N unfinished (default 0: none)
//	--max-num-queued-tokens N     ... while N prompt tokens wait for their prefill (reason "max_num_queued_tokens") (default 0)
//	--api-per-request D           API server CPU per request: parsing, chat template (default 300us)
//	--api-per-prompt-token D      API server CPU per prompt token: tokenization (default 500ns)
//	--api-per-output-token D      API server CPU per generated token: detokenization, responses (default 15us)
//	--kv-role consumer            the decode side of disaggregated prefill/decode (vLLM's kv_role kv_consumer with the
//	                              NixlConnector): requests of remote_prefill scenarios load their prompt's KV;
//	                              exports vllm:num_requests_kv_fetch_by_stage and the vllm:nixl_* families (default: none)
//	--kv-bytes-per-token N        KV bytes a token's transfer moves (default 131072, Llama-3.1-8B bf16)
//	--kv-transfer-bandwidth B     KV transfer link, bytes/s (default 2e10)
//	--num-speculative-tokens K    speculative decoding with K draft tokens a step (vLLM's --speculative-config
//	                              num_speculative_tokens); exports vllm:spec_decode_* (default 0: off)
//	--enable-lora                 serve LoRA adapters; exports vllm:lora_requests_info
//	--max-loras N                 adapters in one batch (default 1, as vLLM)
//	--lora-modules A,B|A=PATH,... adapter names (the paths are ignored; default lora-1, lora-2, ...); a request whose
//	                              "model" is one of them uses it
//	--server-dev-mode             serve vLLM's development endpoints (as VLLM_SERVER_DEV_MODE=1, also taken from it):
//	                              /sleep, /wake_up, /is_sleeping, /pause, /resume, /is_paused, /update_weights
//	--sleep-time D, --wake-time D, --weight-update-time D
//	                              how long a level 1/2 sleep, a wake-up and an /update_weights take (default 2s, 3s, 10s)
//	--pod-names A,B,...           each --listen address's pod name, for GET /admin/targets (default <prefix>-0, -1, ...)
//	--pod-name-prefix P           prefix of the pod names (default vllm-sim); a rollout names pods P-<hash>-<suffix>
//	--sd-labels k=v,...           labels every target of GET /admin/targets carries (e.g. namespace=demo)
//	--profiler-dir DIR            enable POST /start_profile and /stop_profile, writing traces to DIR
//	                              (also taken from VLLM_TORCH_PROFILER_DIR); without it both are 404
//	--profile-flush-delay D       how long /stop_profile takes to "flush" before it returns (default 2s);
//	                              as in vLLM, the engine loop makes no step meanwhile (no token, gauges frozen)
//	--tensor-parallel-size N      ranks: the GPUs each pod holds, one trace file per rank (default 1)
//	--execute-model-timeout D     vLLM's VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS: with TP > 1 a step's RPC to the workers
//	                              times out after D and the engine dies (a lost GPU, gpu-xid79) (default 300s)
//	--dcgm-listen ADDR[,ADDR...]  serve a dcgm-exporter stand-in per pod, on its own address (the exporter is another
//	                              pod: another scrape target), one node per pod; GET /metrics there (default: none)
//	--dcgm-nodes A,B,...          the nodes' names, the exporter's Hostname label (default gpu-node-0, gpu-node-1, ...)
//	--gpus-per-node N             GPUs on each node; the pod holds the first --tensor-parallel-size, the rest idle (default 8)
//	--dcgm-flavor F               which exporter the stand-in writes as: 4.8-gpu-operator (4.5.3-4.8.2, the image's CSV),
//	                              4.8-helm (its chart's CSV: no DCGM_FI_DRIVER_VERSION, no FB_RESERVED), 4.7-gpu-operator
//	                              (a 0 XID series before the first XID), main (hostname in lower case), 3.4 (no
//	                              pci_bus_id, no err_code/err_msg) (default 4.8-gpu-operator)
//	--dcgm-optional               also the fields the CSV ships commented out: NVLink error counters, DCGM_EXP_XID_ERRORS_COUNT
//	--otlp-traces-endpoint URL    export one OTLP span per finished request as vLLM does (llm_request,
//	                              kind SERVER, gen_ai.latency.* / gen_ai.usage.* / gen_ai.request.id;
//	                              none for aborted requests); grpc unless
//	                              OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf; service name from
//	                              OTEL_SERVICE_NAME (else unknown_service); host:port or http(s):// URL
//	--gateway-listen ADDR         also serve a router / gateway stand-in in front of the pods (default: none): it owns the
//	                              model's clients (--gateway-scenario replaces --scenario's load), sends their requests to
//	                              the pods as the component it plays would, and serves that component's /metrics
//	--gateway-kind KIND           production-stack (vLLM production-stack's router: no queue of its own, its
//	                              vllm:request_latency_seconds{server,model,status}, vllm:num_requests_running{server}, ...)
//	                              or llm-d-epp (llm-d's Endpoint Picker with flow control: llm_d_epp_flow_control_* and
//	                              their inference_extension_* twins, ...) (default llm-d-epp)
//	--gateway-pool NAME           the InferencePool's name, the EPP's inference_pool label (default vllm-sim)
//	--gateway-scenario NAME       gateway-healthy, gateway-held (llm-d-epp), gateway-router-held (production-stack), gateway-knee,
//	                              gateway-stall (default gateway-healthy)
//	--log-level LEVEL             debug, info, warn, error (default info)
//
// HTTP endpoints:
//
//	GET  /health, /ping, /version     liveness (200; also while the engine core hangs)
//	GET  /metrics                     vLLM's Prometheus metrics and the API server process's (process_*,
//	                                  http_requests_total)
//	GET  /v1/models                   lists --model-name (and the LoRA adapters)
//	POST /v1/completions              non-streaming; the request runs through the API server and the engine and the
//	POST /v1/chat/completions         answer comes when it finishes (a disconnect aborts it); 503 at a queue limit
//	POST /start_profile, /stop_profile  as vLLM: 404 without a profiler dir, 200 with an empty body;
//	                                  stop returns after writing <host>_rank<N>.<ms>.pt.trace.json.gz
//	POST /sleep?level=1&mode=abort    with --server-dev-mode, as vLLM's: answers when asleep
//	POST /wake_up, GET /is_sleeping   {"status":"awake","tags":null}, {"is_sleeping":bool}
//	POST /pause?mode=abort|wait|keep  {"status":"paused"}; POST /resume; GET /is_paused
//	POST /update_weights              an RL weight update (rl_weight_update_operations_in_flight{operation="update"})
//	GET  /admin/profile               {"active":bool,"starts":n,"stops":n,"traces":[...]}
//	GET  /admin/scenario              the current scenario and engine stats
//	POST /admin/scenario              switch: body {"scenario":"overload"} or ?name=overload; optional
//	                                  "arrival_rate" (number) and "reset" (default true: the old scenario's
//	                                  synthetic requests vanish uncounted so the new signature shows at once).
//	                                  A switch also ends what the previous scenario did to the server: a hang is
//	                                  released, a sleeping or paused engine resumes, a server that is down restarts
//	GET  /admin/stats                 engine stats: running, waiting, KV blocks, preemptions, held (requests the API
//	                                  server has not handed over), connections, pod, restarts, down, hung, paused, asleep
//	POST /admin/hang                  stop the engine core now: body {"for":"90s"} (no duration: until released);
//	                                  {"release":true} ends a hang (the held requests reach the engine at once)
//	POST /admin/restart               crash the server and start it again: {"down":"10s"} (nothing answers but
//	                                  /admin/*), {"new_pod":true} (the new process is a new pod: a new name)
//	GET  /admin/fleet                 every pod's scenario and stats
//	POST /admin/fleet                 switch every pod: body {"scenario":"router-imbalance"} (a fleet scenario)
//	                                  or a pod scenario name (every pod gets it); optional "reset"
//	GET  /admin/targets               the pods as Prometheus HTTP service discovery reads them:
//	                                  [{"targets":["127.0.0.1:8000"],"labels":{"pod":"vllm-sim-0",...}}, ...]
//
// While a server is down (restart-loop, /admin/restart) every connection but /admin/* is closed without an
// answer, as a port with nothing behind it: the scrape fails (up 0).
//
// Scenarios (calibrated for the default engine flags; signature within 15-60 s of switching):
//
//	idle             no synthetic load
//	healthy          4 req/s, prompts ~300, outputs ~150 tokens: ITL ~20 ms, TTFT p99 < 0.1 s, KV < 5%
//	overload         70 req/s of short requests, about twice capacity: running pinned at max-num-seqs,
//	                 waiting grows ~40/s, queue time and TTFT p99 grow without bound (p99 > 10 s within
//	                 30 s), prefill and ITL flat, KV ~30%, no preemption, generation tokens/s plateau
//	kv-pressure      a burst of 170 long requests (prompt ~1200, output ~1200) then 0.8 req/s:
//	                 KV usage >= 0.99 within 15 s, the scheduler preempts from 15 s on, but the victims
//	                 wait behind the full pool, so num_preemptions_total (counted when a victim resumes)
//	                 reads ~0 for ~90 s and ~0.7-1/s after two minutes; ITL and e2e inflate;
//	                 new arrivals starve (few first tokens, few finishes), waiting ~50-130
//	long-prompts     0.6 req/s with ~5000-token prompts: prefill time ~6x healthy, TTFT p99 ~0.3-0.5 s,
//	                 queue near zero
//	wide-batch       a burst of 130 then 2.8 req/s of requests with ~500-token outputs, near decode capacity:
//	                 running ~160-200, ITL mean ~5x and p99 ~3.5x healthy, decode time up, TTFT p99 < 0.5 s,
//	                 no queue (queue mean ~0.8 s for the first minute while the burst drains), no preemption
//	client-timeouts  healthy-like load but 40% of clients give up after 0.5-2.5 s: ~30% of the requests
//	                 that got a first token never finish, e2e latency normal
//	shared-prefix    1 req/s of ~3000-token chat prompts sharing a system prompt: ~90% prefix-cache hits
//	prefix-collapse  shared-prefix for 90 s, then a template change puts a request id at the top of every
//	                 prompt: same lengths, hit rate ~0, prefill ~4x and TTFT p99 ~0.45 s
//	engine-stalled   healthy load on a wedged engine (vllm#39863): no step, no token, the queue gauge grows 4/s;
//	                 /health 200
//
// The server's own incidents (issue 24), on the healthy load:
//
//	engine-hang      20 s after the switch the engine core stops (a hang in a step, a GPU fault, a collective
//	                 hang: SIGSTOP of EngineCore) until released (POST /admin/hang {"release":true}, or a switch):
//	                 every vllm: series freezes (gauges, counters, histograms; ~13 running, 0 waiting),
//	                 /metrics and /health answer, the API server holds the new requests (process_open_fds +4/s,
//	                 process_cpu_seconds_total barely moves). Released, the held requests reach the engine at
//	                 once: their TTFT holds the hang, their queue time does not, and a burst drains
//	engine-hang-queued  a burst of 400 at the switch, the core stops 3 s later: frozen with ~230 running, ~180 waiting
//	engine-hang-idle    one short request a second; 20 s after the switch, once the engine holds nothing, the
//	                 core stops for 70 s: frozen at 0/0 while the API server holds the arrivals (process_open_fds
//	                 +1/s); engine-hang-idle-quiet: the same stop with nothing arriving (nothing to tell from idle)
//	sleep            20 s after the switch an operator puts the engine to sleep (level 1, mode abort): the requests
//	                 in flight are aborted and counted (finished_reason abort), running and waiting read 0,
//	                 engine_sleep_state{awake} 0 and {weights_offloaded} 1 once the 2 s sleep completes
//	                 (vllm:sleep_mode_operations_in_flight{operation="sleep"} 1 meanwhile). New requests are not
//	                 refused (vLLM 0.32 queues them unscheduled, uncounted by the gauges) until /wake_up
//	weight-update    from 20 s on, every 60 s an RL trainer pauses generation (mode keep: nothing scheduled, the
//	                 gauges frozen with requests running, engine_sleep_state awake) and updates the weights for
//	                 15 s (vllm:rl_weight_update_operations_in_flight{operation="update"} 1), then resumes
//	restart-loop     the server dies 40 s after each start and is down 15 s (scrapes fail), then starts empty:
//	                 counters at 0, a new process_start_time_seconds, the same pod name (CrashLoopBackOff)
//
// The hardware ring (issue 35; the GPUs as the --dcgm-listen stand-in reports them, docs/gpu-facts.md):
//
//	gpu-xid79        20 s after the switch rank 1's GPU falls off the bus (XID 79): its dcgm-exporter series vanish,
//	                 the engine core hangs in the collective (vllm: series frozen, rank 0 spinning at 100%) until
//	                 --execute-model-timeout (300 s), then the server dies and stays down (restarts fail on the lost
//	                 GPU) until the next switch (the node rebooted). Needs --tensor-parallel-size 2; with 1, hangs for good
//	gpu-throttle     30 s after the switch rank 0's GPU reaches its thermal limit: SM clock 1267 of 1980 MHz, 87 C,
//	                 every step 1.56x as long (ITL ~1.9x)
//	gpu-row-remap-failure  20 s after the switch rank 0 fails to record a row remap: XID 64,
//	                 DCGM_FI_DEV_ROW_REMAP_FAILURE 1; vLLM serves on. The XID stays on the gauge after the switch
//	gpu-xid-repeat   20 s after the switch rank 0's GPU reports XID 95 and the server dies; it starts again 10 s later
//	                 on the same GPU and dies of XID 95 again 20 s after each start. The XID gauge shows it once;
//	                 DCGM_EXP_XID_ERRORS_COUNT (--dcgm-optional) counts each
//	gpu-stale-xid    healthy; rank 1 shows XID 48 from an old fault from the exporter's first scrape (start with it)
//	gpu-thermal-throttle  (fleet) pod 0 is gpu-throttle among healthy siblings
//	gpu-idle-pod     (fleet) pod 0 gets no traffic: its GPUs idle at 345 MHz (the hard negative of throttling)
//
// The second ring (issue 26), each with the flags it needs:
//
//	kv-consumer      (--kv-role consumer) 3 req/s from a P/D proxy, ~1500-token prompts prefilled elsewhere,
//	                 ~150-token outputs: each loads its prompt's KV over NIXL (~10 ms, waiting deferred), TTFT ~80 ms
//	kv-transfer-stuck  (--kv-role consumer) kv-consumer, then 30 s after the switch the prefill side stops
//	                 answering: new loads stay in_progress holding their blocks (~60-80 deferred), 30% fail after
//	                 5 s (vllm:nixl_num_failed_transfers_total ~1/s, finished_reason error), tokens stop;
//	                 clients give up after 20-40 s
//	spec-decode      (--num-speculative-tokens 3) healthy load of repetitive text: acceptance 0.65 (0.8 a
//	                 position), ITL ~17 ms a step, ~6 ms per output token
//	spec-decode-acceptance-drop  spec-decode for 90 s, then random text: acceptance ~0.04, ITL ~+15%, time per
//	                 output token ~3x (~18 ms), the batch stays narrow (~10)
//	spec-decode-wide-batch  the hard negative: a burst of 100 then 7 req/s of ~500-token outputs with steady
//	                 acceptance: running ~80-130, ITL and time per output token up ~5x together
//	lora-adapters    (--enable-lora --max-loras 4) healthy load over 3 adapters: nothing deferred
//	lora-hot-adapters  (--enable-lora --max-loras 4) 6 req/s over 8 adapters: ~20-60 requests deferred for a slot
//	                 while the batch has room (~10-45 running), queue time seconds; lora_requests_info lists 4
//	                 running adapters and, as vLLM 0.32, no waiting one
//	frontend-bound   20 req/s of short chats with a heavy chat template (~52 ms of API server CPU each): the API
//	                 server's core saturates (process_cpu_seconds_total 1/s), TTFT grows ~0.15 s/s outside queue
//	                 (~0) and prefill (~30 ms); the engine is not busy (ITL ~25 ms)
//
// The third ring (issue 36):
//
//	decode-steady    3 req/s of chat requests with ~200-token answers: ~10 decoding, ITL ~19 ms
//	prefill-interference  decode-steady, and from 60 s a batch job beside it: 1 req/s of ~7000-token prompts
//	                 asking ~20 tokens, prefilled in chunks of the step's budget: ITL p99 ~2.5x, ITL mean and time
//	                 per output token ~1.45x, the running batch ~1.6x (the long requests and the slower decodes)
//	decode-widening  the hard negative: decode-steady's clients at 10 req/s: running ~14x, ITL ~3.4x, no long prompt
//	long-prompts-alone  the hard negative: the batch job alone (0.1 req/s): prefill long, ITL a decode-only step's
//	structured-outputs  6 req/s of tool calls whose grammars take 2 s (deferred meanwhile), a burst of 300 at the
//	                 switch: admitted once compiled, the batch fills and drains
//	admission-wedge  structured-outputs on a scheduler with vllm#53130's fault: once running + parked reach
//	                 --max-num-seqs nothing is admitted again: running drains to 0, waiting grows, KV 0, /health 200
//
// Gateway scenarios (--gateway-listen; POST /admin/gateway {"scenario":"gateway-held"} on the gateway's address):
//
//	gateway-healthy  healthy's clients, 4 req/s per pod, through the gateway
//	gateway-held     (llm-d-epp) 20 s after the switch every scrape the EPP makes of the pods fails
//	                 (llm-d-router#2100): the pool's saturation pins at exactly 1.0, stale endpoints = pods, dispatch
//	                 halts; requests wait in the EPP until the 60 s TTL evicts them, while every engine idles
//	gateway-router-held  (production-stack) 20 s after the switch the router counts each request sent (in
//	                 prefill) and it never reaches the engine (production-stack#706): its vllm:num_prefill_requests
//	                 grows by every arrival, its latency is observed at the clients' 120 s timeout, every engine idles
//	gateway-knee     overload's clients, 70 req/s per pod: the engines full (the hard negative of both holds)
//	gateway-stall    healthy's clients while every engine is wedged: requests held in the engines (hard negative)
//
// Fleet scenarios (several --listen addresses; POST /admin/fleet):
//
//	engine-stall     healthy load on every pod, the engine of pod 0 wedged
//	router-imbalance 20 req/s per pod overall of overload-shaped requests, the router sending pod 0 eight
//	                 shares to every other pod's one: with 3 pods, 48 req/s on pod 0 (past the knee) and
//	                 6 on each sibling
//	rollout          healthy load; every pod is replaced by a new pod, 10 s apart: new names in GET /admin/targets
//	                 (one new ReplicaSet hash), empty engines, counters from 0: no pod-scoped series has history
//
// Aborts and preemptions are recorded as real vLLM V1 records them (docs/vllm-facts.md): a client that gives
// up is never counted as finished (request_success_total{finished_reason="abort"} stays 0; its
// prompt, first token and generated tokens stay counted), and a preemption is counted when the
// preempted request emits its next token after recompute, never if its client gives up first.
// The exposition is prometheus_client's text format: le="1.0", le="+Inf", _created samples.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

func run(ctx context.Context, args []string) int {
	return runWith(ctx, args, os.Stderr, nil)
}

// runWith runs the simulator until ctx is done; ready, if not nil, receives the
// listening address.
func runWith(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) int {
	def := sim.DefaultConfig()
	fs := flag.NewFlagSet("vllm-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8000", "address to serve on")
	modelName := fs.String("model-name", def.ModelName, "served model name (model_name label)")
	scenario := fs.String("scenario", "healthy", "initial scenario")
	arrivalRate := fs.Float64("arrival-rate", -1, "override the initial scenario's arrival rate (requests/s)")
	seed := fs.Uint64("seed", def.Seed, "RNG seed")
	maxNumSeqs := fs.Int("max-num-seqs", def.MaxNumSeqs, "maximum running requests")
	maxBatched := fs.Int("max-num-batched-tokens", def.MaxNumBatchedTokens, "token budget per step")
	numBlocks := fs.Int("num-gpu-blocks", def.NumGPUBlocks, "KV cache blocks")
	blockSize := fs.Int("block-size", def.BlockSize, "tokens per KV block")
	maxModelLen := fs.Int("max-model-len", def.MaxModelLen, "maximum prompt+output tokens")
	gpuUtil := fs.Float64("gpu-memory-utilization", def.GPUMemoryUtilization, "reported in cache_config_info")
	prefix := fs.Bool("enable-prefix-caching", def.EnablePrefixCaching, "model prefix cache hits")
	stepBase := fs.Duration("step-base", def.StepBase, "fixed cost of an engine step")
	perSeq := fs.Duration("per-seq", def.PerSeq, "cost per scheduled request")
	perPrefill := fs.Duration("per-prefill-token", def.PerPrefillToken, "cost per prefill token")
	perCtx := fs.Duration("per-context-token", def.PerContextToken, "cost per context token read by the batch")
	metricNames := fs.String("metric-names", "new", "metric names: new, legacy (before 0.9.2) or both (0.9.2 to 0.11)")
	profDir := fs.String("profiler-dir", os.Getenv("VLLM_TORCH_PROFILER_DIR"), "profiler trace directory (enables /start_profile, /stop_profile)")
	flushDelay := fs.Duration("profile-flush-delay", 2*time.Second, "delay before /stop_profile returns; the engine loop is stalled meanwhile, as in vLLM")
	tp := fs.Int("tensor-parallel-size", 1, "ranks: the GPUs each pod holds (one trace file per rank)")
	execTimeout := fs.Duration("execute-model-timeout", def.ExecuteModelTimeout, "vLLM's VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS: the engine dies when a step's RPC to its workers takes longer (TP > 1)")
	dcgmListen := fs.String("dcgm-listen", "", "serve a dcgm-exporter stand-in per pod on these addresses, comma-separated (one node per pod)")
	dcgmNodes := fs.String("dcgm-nodes", "", "the nodes' names, comma-separated (default gpu-node-<i>)")
	gpusPerNode := fs.Int("gpus-per-node", 8, "GPUs on each node (the pod holds the first --tensor-parallel-size)")
	dcgmFlavor := fs.String("dcgm-flavor", sim.DefaultDCGMFlavor, "the dcgm-exporter the stand-in writes as: 4.8-gpu-operator, 4.8-helm, 4.7-gpu-operator, main, 3.4")
	dcgmOptional := fs.Bool("dcgm-optional", false, "also the fields dcgm-exporter's CSV ships commented out (NVLink errors, DCGM_EXP_XID_ERRORS_COUNT)")
	otlpTraces := fs.String("otlp-traces-endpoint", "", "OTLP endpoint for request traces (as vLLM's flag)")
	podNames := fs.String("pod-names", "", "pod name of each --listen address, comma-separated (default <pod-name-prefix>-<i>)")
	podPrefix := fs.String("pod-name-prefix", def.PodNamePrefix, "prefix of the pod names a rollout gives")
	sdLabels := fs.String("sd-labels", "", "labels every target of GET /admin/targets carries, k=v,k=v")
	maxQueuedReqs := fs.Int("max-num-queued-reqs", 0, "refuse requests (503) beyond this many unfinished ones (0: no limit)")
	maxQueuedTokens := fs.Int("max-num-queued-tokens", 0, "refuse requests (503) while this many prompt tokens wait for prefill (0: no limit)")
	devMode := fs.Bool("server-dev-mode", os.Getenv("VLLM_SERVER_DEV_MODE") == "1", "serve vLLM's development endpoints: /sleep, /wake_up, /is_sleeping, /pause, /resume, /is_paused, /update_weights")
	apiPerRequest := fs.Duration("api-per-request", def.APIPerRequest, "API server CPU per request (parsing, chat template)")
	apiPerPromptToken := fs.Duration("api-per-prompt-token", def.APIPerPromptToken, "API server CPU per prompt token (tokenization)")
	apiPerOutputToken := fs.Duration("api-per-output-token", def.APIPerOutputToken, "API server CPU per generated token (detokenization, responses)")
	sleepTime := fs.Duration("sleep-time", def.SleepTime, "how long a level 1 or 2 sleep takes (offloading the weights)")
	wakeTime := fs.Duration("wake-time", def.WakeTime, "how long a wake-up takes (reloading the weights)")
	weightUpdateTime := fs.Duration("weight-update-time", def.WeightUpdateTime, "how long POST /update_weights takes")
	kvRole := fs.String("kv-role", "", "consumer: the decode side of disaggregated prefill/decode (NixlConnector, kv_role kv_consumer)")
	kvBytes := fs.Int("kv-bytes-per-token", def.KVBytesPerToken, "KV cache bytes per token a KV transfer moves")
	kvBandwidth := fs.Float64("kv-transfer-bandwidth", def.KVTransferBandwidth, "KV transfer bandwidth, bytes/s")
	numSpec := fs.Int("num-speculative-tokens", 0, "speculative decoding with this many draft tokens per step (0: off)")
	enableLoRA := fs.Bool("enable-lora", false, "serve LoRA adapters")
	maxLoras := fs.Int("max-loras", def.MaxLoras, "LoRA adapters in one batch")
	loraModules := fs.String("lora-modules", "", "LoRA adapter names, comma-separated (default lora-1, lora-2, ...)")
	gwListen := fs.String("gateway-listen", "", "serve a router / gateway stand-in in front of the pods on this address (its /metrics, /admin/gateway); it owns their clients")
	gwKind := fs.String("gateway-kind", string(sim.GatewayEPP), "the stand-in: production-stack (vLLM production-stack's router) or llm-d-epp (llm-d's Endpoint Picker with flow control)")
	gwPool := fs.String("gateway-pool", "vllm-sim", "the InferencePool's name (the EPP's inference_pool and name labels)")
	gwScenario := fs.String("gateway-scenario", "gateway-healthy", "the gateway's initial scenario (it replaces --scenario's load)")
	logLevel := fs.String("log-level", "info", "log level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	lvl, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "vllm-sim: bad --log-level: %v\n", err)
		return 2
	}
	log := zerolog.New(stderr).Level(lvl).With().Timestamp().Str("component", "vllm-sim").Logger()

	cfg := def
	cfg.ModelName, cfg.Seed = *modelName, *seed
	cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = *maxNumSeqs, *maxBatched
	cfg.NumGPUBlocks, cfg.BlockSize, cfg.MaxModelLen = *numBlocks, *blockSize, *maxModelLen
	cfg.GPUMemoryUtilization, cfg.EnablePrefixCaching = *gpuUtil, *prefix
	cfg.StepBase, cfg.PerSeq, cfg.PerPrefillToken, cfg.PerContextToken = *stepBase, *perSeq, *perPrefill, *perCtx
	cfg.PodNamePrefix, cfg.MaxNumQueuedReqs, cfg.MaxNumQueuedTokens = *podPrefix, *maxQueuedReqs, *maxQueuedTokens
	cfg.APIPerRequest, cfg.APIPerPromptToken, cfg.APIPerOutputToken = *apiPerRequest, *apiPerPromptToken, *apiPerOutputToken
	cfg.SleepTime, cfg.WakeTime, cfg.WeightUpdateTime = *sleepTime, *wakeTime, *weightUpdateTime
	cfg.KVRole, cfg.KVBytesPerToken, cfg.KVTransferBandwidth = *kvRole, *kvBytes, *kvBandwidth
	cfg.NumSpeculativeTokens, cfg.EnableLoRA, cfg.MaxLoras = *numSpec, *enableLoRA, *maxLoras
	cfg.TensorParallelSize, cfg.ExecuteModelTimeout = max(1, *tp), *execTimeout
	for _, m := range splitList(*loraModules) {
		name, _, _ := strings.Cut(m, "=") // vLLM's name=path: the path does not matter here
		cfg.LoRAModules = append(cfg.LoRAModules, name)
	}
	labels, err := parseLabels(*sdLabels)
	if err != nil {
		fmt.Fprintf(stderr, "vllm-sim: --sd-labels: %v\n", err)
		return 2
	}
	if cfg.MetricNames, err = sim.ParseMetricNames(*metricNames); err != nil {
		fmt.Fprintf(stderr, "vllm-sim: --metric-names: %v\n", err)
		return 2
	}
	gatewayKind, err := sim.ParseGatewayKind(*gwKind)
	if err != nil {
		fmt.Fprintf(stderr, "vllm-sim: --gateway-kind: %v\n", err)
		return 2
	}
	addrs := strings.Split(*listen, ",")
	names := splitList(*podNames)
	if len(names) > 0 && len(names) != len(addrs) {
		fmt.Fprintf(stderr, "vllm-sim: --pod-names has %d names for %d --listen addresses\n", len(names), len(addrs))
		return 2
	}
	engines := make([]*sim.Engine, len(addrs))
	for i := range addrs {
		c := cfg
		c.Seed = cfg.Seed + uint64(i) // each pod its own clients
		c.PodName = fmt.Sprintf("%s-%d", cfg.PodNamePrefix, i)
		if len(names) > 0 {
			c.PodName = names[i]
		}
		if engines[i], err = sim.NewEngine(c); err != nil {
			fmt.Fprintf(stderr, "vllm-sim: %v\n", err)
			return 2
		}
	}
	fleet := sim.NewFleet(engines...)
	if err := fleet.Apply(*scenario, true, time.Now()); err != nil {
		fmt.Fprintf(stderr, "vllm-sim: %v\n", err)
		return 2
	}
	if *arrivalRate >= 0 {
		for _, eng := range engines {
			sc := eng.Scenario()
			sc.ArrivalRate = *arrivalRate
			eng.SetScenario(sc, true, time.Now())
		}
	}
	if *otlpTraces != "" {
		proto, err := sim.TracesProtocol()
		if err != nil {
			fmt.Fprintf(stderr, "vllm-sim: %v\n", err)
			return 2
		}
		tr, err := sim.NewTracer(ctx, *otlpTraces, proto)
		if err != nil {
			fmt.Fprintf(stderr, "vllm-sim: %v\n", err)
			return 2
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tr.Shutdown(sctx); err != nil {
				log.Warn().Err(err).Msg("flushing traces")
			}
		}()
		for _, eng := range engines {
			eng.SetFinishObserver(tr.Record)
		}
		log.Info().Str("otlp_traces_endpoint", *otlpTraces).Str("protocol", proto).Msg("exporting request traces")
	}

	engCtx, cancelEngine := context.WithCancel(ctx)
	defer cancelEngine()
	var runs sync.WaitGroup
	serveErr := make(chan error, 2*len(addrs)) // the pods' servers and their dcgm-exporter stand-ins
	var servers []*http.Server
	var bound []string
	for i, addr := range addrs {
		eng := engines[i]
		var prof *sim.Profiler
		if *profDir != "" {
			dir := *profDir
			if len(addrs) > 1 {
				dir = filepath.Join(dir, fmt.Sprintf("pod-%d", i))
			}
			prof = sim.NewProfiler(dir, *flushDelay, *tp, log)
		}
		srv := sim.NewServer(eng, prof, log)
		srv.ServeFleet(fleet)
		if *devMode {
			srv.EnableDevEndpoints()
		}
		ln, err := net.Listen("tcp", strings.TrimSpace(addr))
		if err != nil {
			log.Error().Err(err).Str("listen_addr", addr).Msg("cannot listen")
			shutdown(servers, cancelEngine, &runs)
			return 1
		}
		hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		bound = append(bound, ln.Addr().String())
		runs.Add(1)
		go func() {
			defer runs.Done()
			eng.Run(engCtx)
		}()
		go func() { serveErr <- hs.Serve(ln) }()
		sc := eng.Scenario()
		log.Info().Int("pod", i).Str("pod_name", eng.PodName()).Str("listen_addr", ln.Addr().String()).Str("model_name", cfg.ModelName).Str("scenario", sc.Name).
			Float64("arrival_rate", sc.ArrivalRate).Bool("engine_stalled", sc.EngineStalled).Str("metric_names", string(cfg.MetricNames)).
			Str("profiler_dir", *profDir).Str("kv_role", cfg.KVRole).Int("num_speculative_tokens", cfg.NumSpeculativeTokens).
			Bool("enable_lora", cfg.EnableLoRA).Int("max_loras", cfg.MaxLoras).Bool("server_dev_mode", *devMode).Msg("vllm-sim serving")
	}
	fleet.SetTargets(bound, labels)
	if *dcgmListen != "" {
		dcgmAddrs, err := serveDCGM(engines, dcgmFlags{listen: splitList(*dcgmListen), nodes: splitList(*dcgmNodes),
			gpus: *gpusPerNode, flavor: *dcgmFlavor, optional: *dcgmOptional, namespace: labels["namespace"]}, serveErr)
		if err != nil {
			fmt.Fprintf(stderr, "vllm-sim: %v\n", err)
			shutdown(servers, cancelEngine, &runs)
			return 2
		}
		for _, d := range dcgmAddrs {
			servers = append(servers, d.srv)
			log.Info().Str("node", d.node).Str("dcgm_listen_addr", d.addr).Str("pod_name", d.pod).Str("dcgm_flavor", *dcgmFlavor).Msg("dcgm-exporter stand-in serving")
		}
	}
	if *gwListen != "" {
		gcfg := sim.GatewayConfig{Kind: gatewayKind, ModelName: cfg.ModelName, Pool: *gwPool, Seed: cfg.Seed}
		for i, a := range bound {
			gcfg.Servers = append(gcfg.Servers, "http://"+a)
			gcfg.Pods = append(gcfg.Pods, engines[i].PodName())
		}
		gw, err := sim.NewGateway(gcfg, engines...)
		if err == nil {
			err = gw.Apply(*gwScenario, time.Now())
		}
		var ln net.Listener
		if err == nil {
			ln, err = net.Listen("tcp", strings.TrimSpace(*gwListen))
		}
		if err != nil {
			log.Error().Err(err).Str("gateway_listen", *gwListen).Msg("cannot start the gateway")
			shutdown(servers, cancelEngine, &runs)
			return 1
		}
		hs := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go func() { serveErr <- hs.Serve(ln) }()
		runs.Add(1)
		go func() {
			defer runs.Done()
			gw.Run(engCtx.Done())
		}()
		log.Info().Str("gateway_addr", ln.Addr().String()).Str("gateway_kind", string(gatewayKind)).Str("gateway_scenario", *gwScenario).Msg("gateway stand-in serving")
	}
	if ready != nil {
		ready <- strings.Join(bound, ",")
	}

	code := 0
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		log.Error().Err(err).Msg("server failed")
		code = 1
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, hs := range servers {
		_ = hs.Shutdown(shutdownCtx)
	}
	cancelEngine()
	runs.Wait()
	log.Info().Msg("vllm-sim stopped")
	return code
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parseLabels parses k=v,k=v.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not k=v", kv)
		}
		out[k] = v
	}
	return out, nil
}

// shutdown closes the servers started so far and stops the engines.
func shutdown(servers []*http.Server, cancelEngine context.CancelFunc, runs *sync.WaitGroup) {
	cancelEngine()
	runs.Wait()
	for _, hs := range servers {
		_ = hs.Close()
	}
}

// dcgmFlags are the dcgm-exporter stand-in's flags.
type dcgmFlags struct {
	listen, nodes []string
	gpus          int
	flavor        string
	optional      bool
	namespace     string
}

// dcgmServer is one node's stand-in exporter, serving.
type dcgmServer struct {
	node, addr, pod string
	srv             *http.Server
}

// serveDCGM starts one dcgm-exporter stand-in per pod, each on its own listener (node i holds
// pod i); serve errors go to errs.
func serveDCGM(engines []*sim.Engine, f dcgmFlags, errs chan<- error) ([]dcgmServer, error) {
	flavor, ok := sim.DCGMFlavors[f.flavor]
	if !ok {
		return nil, fmt.Errorf("--dcgm-flavor: unknown %q", f.flavor)
	}
	if len(f.listen) != len(engines) {
		return nil, fmt.Errorf("--dcgm-listen has %d addresses for %d pods: one exporter per pod's node", len(f.listen), len(engines))
	}
	if len(f.nodes) > 0 && len(f.nodes) != len(engines) {
		return nil, fmt.Errorf("--dcgm-nodes has %d names for %d pods", len(f.nodes), len(engines))
	}
	var out []dcgmServer
	for i, e := range engines {
		node := fmt.Sprintf("gpu-node-%d", i)
		if len(f.nodes) > 0 {
			node = f.nodes[i]
		}
		x, err := sim.NewDCGMExporter(e, sim.DCGMOptions{Flavor: flavor, Node: node, GPUs: f.gpus, Namespace: f.namespace, Optional: f.optional}, time.Now())
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("tcp", f.listen[i])
		if err != nil {
			for _, d := range out {
				_ = d.srv.Close()
			}
			return nil, fmt.Errorf("--dcgm-listen %s: %w", f.listen[i], err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", x)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { errs <- hs.Serve(ln) }()
		out = append(out, dcgmServer{node: node, addr: ln.Addr().String(), pod: e.PodName(), srv: hs})
	}
	return out, nil
}
