#!/usr/bin/env bash
# The demo (make demo, after make build): the whole chain on loopback ports of its own,
#
#   bin/vllm-sim (one model on three pods) -> Prometheus (alert rules, profile sim, 1s scrape/evaluation)
#   -> Alertmanager -> bin/responder serve
#   bin/vllm-sim -> Jaeger (OTLP, one llm_request span per finished request, as vLLM) -> the same responder
#   a stand-in kube-state-metrics (internal/testenv/cmd/ksm-standin: the three pods are Deployment
#   vllm-demo's, its HPA has maxReplicas 3 and follows the pods' queue) -> the same Prometheus
#
# and a walk through vllm-sim's scenarios (the list near the end, one step an entry). The short
# walk (the default: 7m56s on the idle 2-core machine) shows each kind of verdict once: healthy, prefix-collapse
# on pod 0 (after shared-prefix, the recent past it is judged against), overload of every pod (one
# incident for the model's alerts on every pod), kv-pressure, engine-hang (pod 0's engine core
# stops: every vllm: series frozen) and, on the second ring, a KV transfer that stalls on
# vllm-ring-kv (a second vllm-sim, the decode side of disaggregated serving: --kv-role consumer).
# The full walk (DEMO_WALK=full, make demo-full; about 35 minutes) adds long-prompts, wide-batch and
# client-timeouts on pod 0, the fleet scenarios engine-stall (pod 0 wedged) and router-imbalance
# (pod 0 favoured by the router), two incidents no alert is about, diagnosed by on-demand triage as
# /vllm triage would: restart-loop (engine-restarting) and sleep (engine-paused), an API server that
# becomes the bottleneck (frontend-bound) on pod 0 and speculative decoding whose acceptance drops
# on vllm-ring-spec (a third vllm-sim, --num-speculative-tokens 3); the two ring pods are namespace
# demo-ring, not the model's siblings. It also shows the hardware ring end to end: vllm-gpu-0 (a
# fourth vllm-sim, TP=2, namespace demo-gpu, on node gpu-a7) serves with a dcgm-exporter stand-in
# (--dcgm-listen) that Prometheus scrapes as a cluster does (the exporter's own pod, namespace and
# container as target labels: the vLLM pod arrives in exported_pod, as the gpu: config expects);
# rank 1's GPU falls off the bus (gpu-xid79), VLLMGPUFault fires, the verdict is gpu-fault (started
# in the full walk only; its alert, which stands while the fault is recent, is not waited out). Each is held until the diagnosis of its alert on pod 0 (or
# its triage) arrives (or DEMO_TIMEOUT seconds), then every pod goes back to healthy until the
# alerts resolve. The responder's console notifier prints each diagnosis as it arrives; with
# SLACK_BOT_TOKEN set (and SLACK_CHANNEL, default #vllm-incidents) they go to Slack instead.
#
# Environment: DEMO_WALK short (default) or full; DEMO_ONLY=NAME runs only the steps of that walk
# whose line names NAME (a scenario, e.g. DEMO_WALK=full DEMO_ONLY=gpu-xid79: one step, for
# checking it); DEMO_TIMEOUT (default 180) seconds per wait; DEMO_STAY=1 keeps everything running
# after the walk-through until Ctrl-C (default: 1 on a terminal, 0 otherwise; with 0 the script
# exits non-zero if a scenario did not produce its verdict). Everything it starts is stopped on
# exit or Ctrl-C, and its files live in one mktemp directory (kept with DEMO_KEEP_TMP=1).
set -euo pipefail
cd "$(dirname "$0")/.."

TIMEOUT=${DEMO_TIMEOUT:-180}
WALK=${DEMO_WALK:-short}
ONLY=${DEMO_ONLY:-}
case $WALK in short | full) ;; *) echo "DEMO_WALK is short or full, not $WALK" >&2; exit 2 ;; esac
if [ -t 1 ]; then STAY=${DEMO_STAY:-1}; else STAY=${DEMO_STAY:-0}; fi
for b in bin/responder bin/vllm-sim; do
  [ -x "$b" ] || { echo "$b missing: run make demo (it builds bin/ first)" >&2; exit 1; }
done
scripts/deps.sh
for b in curl; do command -v "$b" >/dev/null || { echo "demo needs $b" >&2; exit 1; }; done

tmp=$(mktemp -d -t vllm-demo.XXXXXX)
pids=()
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "== stopping the demo"
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do wait "${pids[$i]}" 2>/dev/null || true; done
  if [ "${DEMO_KEEP_TMP:-0}" = 1 ]; then echo "files kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

freeport() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
    return
  fi
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
# waitfor SECONDS WHAT CMD...: polls CMD every second until it succeeds or SECONDS pass.
waitfor() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "   (timed out after ${secs}s waiting for $what)"
  return 1
}

SIM_PORTS=($(freeport) $(freeport) $(freeport))
PROM_PORT=$(freeport)
AM_PORT=$(freeport)
RESP_PORT=$(freeport)
SIM=127.0.0.1:${SIM_PORTS[0]}
SIMS=127.0.0.1:${SIM_PORTS[0]},127.0.0.1:${SIM_PORTS[1]},127.0.0.1:${SIM_PORTS[2]}
SIM_KV=127.0.0.1:$(freeport)
SIM_SPEC=127.0.0.1:$(freeport)
SIM_GPU=127.0.0.1:$(freeport)
DCGM=127.0.0.1:$(freeport)
KSM_PORT=$(freeport)
JAEGER_PORT=$(freeport)
JAEGER_OTLP_PORT=$(freeport)
PROM=http://127.0.0.1:$PROM_PORT
AM=http://127.0.0.1:$AM_PORT
RESP=http://127.0.0.1:$RESP_PORT
JAEGER=http://127.0.0.1:$JAEGER_PORT
POD=vllm-demo-0
NS=demo
NS_RING=demo-ring
NS_GPU=demo-gpu
POD_GPU=vllm-gpu-0
NODE_GPU=gpu-a7
RESPONDER_WEBHOOK_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export RESPONDER_WEBHOOK_TOKEN

echo "== rendering the alert rules (deploy/prometheus, profile sim: short windows, vllm-sim thresholds)"
go run ./cmd/rulegen -profile sim \
  -o "$tmp/vllm-alerts.rules.yml"

echo "== starting Jaeger on $JAEGER (OTLP/gRPC on 127.0.0.1:$JAEGER_OTLP_PORT)"
jaeger_bin=$(scripts/jaeger.sh)
JAEGER_QUERY_HTTP=127.0.0.1:$JAEGER_PORT JAEGER_QUERY_GRPC=127.0.0.1:$(freeport) \
  JAEGER_OTLP_GRPC=127.0.0.1:$JAEGER_OTLP_PORT JAEGER_OTLP_HTTP=127.0.0.1:$(freeport) \
  "$jaeger_bin" --config tools/jaeger/config.yaml >"$tmp/jaeger.log" 2>&1 &
pids+=($!)

echo "== starting vllm-sim: one model on three pods, $SIMS"
mkdir -p "$tmp/profiles"
# As vLLM: the service name comes from OTEL_SERVICE_NAME (one per model), the pod from
# OTEL_RESOURCE_ATTRIBUTES; spans are exported in batches (here every second). The three pods
# share one process, hence one OTel resource: every span is tagged with pod 0, the pod the demo's
# scenarios load (its healthy siblings' requests are mostly faster than traces.min_duration).
OTEL_SERVICE_NAME=vllm-llama-8b OTEL_RESOURCE_ATTRIBUTES=k8s.pod.name=$POD OTEL_BSP_SCHEDULE_DELAY=1000 \
  bin/vllm-sim --listen "$SIMS" --scenario healthy --profiler-dir "$tmp/profiles" --log-level warn \
  --otlp-traces-endpoint "http://127.0.0.1:$JAEGER_OTLP_PORT" >"$tmp/vllm-sim.log" 2>&1 &
pids+=($!)

echo "== starting vllm-sim for the second ring: vllm-ring-kv on $SIM_KV (a KV consumer), vllm-ring-spec on $SIM_SPEC (speculative decoding)"
bin/vllm-sim --listen "$SIM_KV" --kv-role consumer --scenario healthy --seed 7 --log-level warn >"$tmp/vllm-sim-kv.log" 2>&1 &
pids+=($!)
bin/vllm-sim --listen "$SIM_SPEC" --num-speculative-tokens 3 --scenario spec-decode --seed 9 --log-level warn >"$tmp/vllm-sim-spec.log" 2>&1 &
pids+=($!)
# The hardware ring (full walk only): a TP=2 pod on node gpu-a7 and its node's dcgm-exporter
# stand-in, scraped as another target (job dcgm-exporter, honor_labels false: the payload's pod,
# namespace and container become exported_*, the gpu: section's defaults). vLLM's RPC deadline is
# cut from 300s to 60s so that the lost GPU's engine dies within the step.
gpu_targets="" dcgm_job=""
if [ "$WALK" = full ]; then
  echo "== starting vllm-sim for the hardware ring: $POD_GPU on $SIM_GPU (TP=2, node $NODE_GPU), its dcgm-exporter stand-in on $DCGM"
  bin/vllm-sim --listen "$SIM_GPU" --pod-names "$POD_GPU" --sd-labels "namespace=$NS_GPU" --tensor-parallel-size 2 \
    --execute-model-timeout 60s --dcgm-listen "$DCGM" --dcgm-nodes "$NODE_GPU" --gpus-per-node 4 \
    --scenario healthy --seed 11 --log-level warn >"$tmp/vllm-sim-gpu.log" 2>&1 &
  pids+=($!)
  gpu_targets="
      - targets: [\"$SIM_GPU\"]
        labels: {pod: $POD_GPU, namespace: $NS_GPU}"
  dcgm_job="
  - job_name: dcgm-exporter
    static_configs:
      - targets: [\"$DCGM\"]
        labels: {pod: nvidia-dcgm-exporter-$NODE_GPU, namespace: gpu-operator, container: nvidia-dcgm-exporter}"
fi
echo "== starting a stand-in kube-state-metrics on 127.0.0.1:$KSM_PORT: Deployment vllm-demo, its HPA (max 3 replicas, 20 waiting per pod)"
go build -o "$tmp/ksm-standin" ./internal/testenv/cmd/ksm-standin
"$tmp/ksm-standin" --listen "127.0.0.1:$KSM_PORT" --namespace "$NS" --deployment vllm-demo \
  --pods vllm-demo-0,vllm-demo-1,vllm-demo-2 --hpa-min 1 --hpa-max 3 --hpa-target 20 \
  --prometheus "$PROM" --reading "avg(sum by (pod) (vllm:num_requests_waiting{namespace=\"$NS\"}))" \
  >"$tmp/ksm-standin.log" 2>&1 &
pids+=($!)

echo "== starting Prometheus on $PROM"
cat >"$tmp/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $tmp/vllm-alerts.rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:$AM_PORT"]
scrape_configs:
  - job_name: vllm
    static_configs:
      - targets: ["127.0.0.1:${SIM_PORTS[0]}"]
        labels: {pod: vllm-demo-0, namespace: $NS}
      - targets: ["127.0.0.1:${SIM_PORTS[1]}"]
        labels: {pod: vllm-demo-1, namespace: $NS}
      - targets: ["127.0.0.1:${SIM_PORTS[2]}"]
        labels: {pod: vllm-demo-2, namespace: $NS}
      - targets: ["$SIM_KV"]
        labels: {pod: vllm-ring-kv, namespace: $NS_RING}
      - targets: ["$SIM_SPEC"]
        labels: {pod: vllm-ring-spec, namespace: $NS_RING}$gpu_targets
  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: ["127.0.0.1:$KSM_PORT"]$dcgm_job
EOF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/prometheus" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

echo "== starting Alertmanager on $AM"
cat >"$tmp/alertmanager.yml" <<EOF
route:
  receiver: vllm-responder
  group_by: [alertname, namespace, pod, model_name]
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: vllm-responder
    webhook_configs:
      - url: $RESP/alertmanager
        send_resolved: true
        http_config:
          authorization: {credentials_file: $tmp/webhook-token}
EOF
printf '%s' "$RESPONDER_WEBHOOK_TOKEN" >"$tmp/webhook-token"
prometheus-alertmanager --config.file="$tmp/alertmanager.yml" --storage.path="$tmp/alertmanager" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >"$tmp/alertmanager.log" 2>&1 &
pids+=($!)

if [ -n "${SLACK_BOT_TOKEN:-}" ]; then notifier="Slack (${SLACK_CHANNEL:-#vllm-incidents})"; else notifier="console"; fi
echo "== starting bin/responder serve on $RESP (notifier: $notifier)"
cat >"$tmp/responder.yaml" <<EOF
listen: "127.0.0.1:$RESP_PORT"
log: {level: warn, format: console}
# Results are shared for 2s (not the default 10s): a third of the demo's 30s windows would be stale.
prometheus: {url: "$PROM", cache_ttl: 2s}
alertmanager: {url: "$AM"}
webhook: {bearer_token: "\${RESPONDER_WEBHOOK_TOKEN}"}
slack:
  bot_token: "\${SLACK_BOT_TOKEN}"
  signing_secret: "\${SLACK_SIGNING_SECRET}"
  channel: "\${SLACK_CHANNEL:-#vllm-incidents}"
playbooks:
  # Windows to match the sim rules' 30s rate windows; a fresh Prometheus has no day-old
  # baseline, so prefill-bound needs an absolute prefill threshold vllm-sim's long prompts cross.
  window: 30s
  params:
    ttft-p99-high: {prefill_abs: 0.1}
dispatch: {dedup_window: 1h}
# Each scenario is an incident of its own: the next starts as soon as the last one's alerts
# resolved, and with the default quiet time (15m) it would rejoin that incident.
incidents: {quiet_time: 0s}
kubernetes: {selector: 'job="kube-state-metrics"'}
traces:
  url: "$JAEGER"
  services: {"meta-llama/Llama-3.1-8B-Instruct": vllm-llama-8b}
  tags: {k8s.pod.name: "{{ .pod }}"}
profile:
  enabled: true
  url_template: "http://{{.instance}}"
  allowed_networks: [127.0.0.0/8]
EOF
bin/responder check --config "$tmp/responder.yaml" >"$tmp/check.log" 2>&1 ||
  { cat "$tmp/check.log"; exit 1; }
: >"$tmp/responder.out"
bin/responder serve --config "$tmp/responder.yaml" >>"$tmp/responder.out" 2>"$tmp/responder.log" &
pids+=($!)

waitfor 30 "vllm-sim" curl -fsS "http://$SIM/health" || { cat "$tmp/vllm-sim.log"; exit 1; }
waitfor 30 "vllm-sim (KV consumer)" curl -fsS "http://$SIM_KV/health" || { cat "$tmp/vllm-sim-kv.log"; exit 1; }
waitfor 30 "vllm-sim (speculative decoding)" curl -fsS "http://$SIM_SPEC/health" || { cat "$tmp/vllm-sim-spec.log"; exit 1; }
if [ "$WALK" = full ]; then
  waitfor 30 "vllm-sim (hardware ring)" curl -fsS "http://$SIM_GPU/health" || { cat "$tmp/vllm-sim-gpu.log"; exit 1; }
fi
waitfor 60 "Prometheus" curl -fsS "$PROM/-/ready" || { tail -20 "$tmp/prometheus.log"; exit 1; }
waitfor 30 "Alertmanager" curl -fsS "$AM/-/ready" || { tail -20 "$tmp/alertmanager.log"; exit 1; }
waitfor 30 "the responder" curl -fsS "$RESP/healthz" || { tail -20 "$tmp/responder.log"; exit 1; }
waitfor 60 "Jaeger" curl -fsS "$JAEGER/api/services" || { tail -20 "$tmp/jaeger.log"; exit 1; }

# The responder's console output, shown as it arrives.
tail -n +1 -f "$tmp/responder.out" &
pids+=($!)

cat <<EOF

  vllm-sim       http://$SIM        (pod 0: POST /admin/scenario, GET /admin/stats; every pod: POST /admin/fleet)
                 http://$SIM_KV   (vllm-ring-kv, a KV consumer), http://$SIM_SPEC (vllm-ring-spec, speculative decoding)
  Prometheus     $PROM      (alerts: $PROM/alerts)
  Alertmanager   $AM
  responder      $RESP      (metrics: $RESP/metrics)
  Jaeger         $JAEGER      (service vllm-llama-8b, operation llm_request)
  files          $tmp

EOF

banner() {
  echo
  echo "################################################################################"
  printf '## %s\n' "$@"
  echo "################################################################################"
}
# scenario NAME: pod 0 (or the pod run_scenario --pod chose) gets the load NAME (its siblings keep
# theirs); fleet NAME: every pod, by a fleet scenario (router-imbalance, engine-stall) or a pod
# scenario given to all.
scenario() {
  curl -fsS -X POST "http://$SIM/admin/scenario" -H 'Content-Type: application/json' \
    -d "{\"scenario\":\"$1\"}" >/dev/null
}
fleet() {
  curl -fsS -X POST "http://$SIM/admin/fleet" -H 'Content-Type: application/json' \
    -d "{\"scenario\":\"$1\"}" >/dev/null
}
# alerts_of_pod prints how many alerts (pending or firing) Prometheus has for the demo's pods.
alerts_of_pod() {
  curl -fs "$PROM/api/v1/query" --data-urlencode "query=count(ALERTS{namespace=~\"$NS|$NS_RING\"}) or vector(0)" |
    sed -n 's/.*"value":\[[^,]*,"\([0-9]*\)"\].*/\1/p'
}
no_alerts() { [ "$(alerts_of_pod)" = 0 ]; }
# verdict_after, resolved_since: reading the console output (scripts/demo-console.sh).
CONSOLE="$tmp/responder.out"
# shellcheck source=scripts/demo-console.sh
source scripts/demo-console.sh
all_clear() { no_alerts && resolved_since "$1"; }
has_verdict() { [ -n "$(verdict_after "$1" "$2")" ]; }

results=()
failed=0

# conclude scenario what got want t0 line [note]: records the result of a step (failing the demo
# when got is not want), then puts every pod back to healthy until the alerts since line resolve.
conclude() {
  local sc=$1 what=$2 got=$3 want=$4 t0=$5 line=$6 note=${7:-} mark=ok r
  [ "$got" = "$want" ] || { mark="UNEXPECTED"; failed=1; }
  printf -v r '%-16s %-30s -> %-20s %s (%ss)%s' "$sc" "$what" "${got:-none}" "$mark" $((SECONDS - t0)) "$note"
  results+=("$r")
  echo
  echo ">> $r"
  echo ">> back to healthy (the next step starts once the alerts resolve)"
  # a run_scenario --pod puts its pod back to its own resting scenario (its SIM and back)
  if [ "$SIM" = "127.0.0.1:${SIM_PORTS[0]}" ]; then fleet healthy; else scenario "${back:-healthy}"; fi
  settle_line=$line
}
# settle: a step starts once every alert since the last verdict's step began has resolved (waited
# for here, not in conclude, so that the walk ends with its last verdict).
settle_line=""
settle() {
  [ -n "$settle_line" ] || return 0
  waitfor "$TIMEOUT" "the alerts to resolve" all_clear "$settle_line" || true
  settle_line=""
}
# hold scenario seconds description: pod 0 gets the load for that long before its next step (the
# recent past that step is judged against); the healthy check and steps on the other vllm-sims
# (--pod) run meanwhile.
hold_until=0
hold() {
  settle
  banner "$1 on pod 0: $3 (held $2s; the steps that leave pod 0's load alone run meanwhile)."
  scenario "$1"
  hold_until=$((SECONDS + $2))
}
wait_hold() { while [ "$SECONDS" -lt "$hold_until" ]; do sleep 1; done; }

run_scenario() { # [--fleet [--incident] | --pod NAME ADDR BACK] scenario alert expected-verdict description [what the title must say]
  local switch=scenario back=healthy incident=0
  local POD=$POD SIM=$SIM # --pod: this run's pod and its vllm-sim, back to BACK afterwards
  if [ "$1" = --fleet ]; then switch=fleet; shift; fi
  # --incident: the model's alerts on every pod are one incident, one parent (counted, and a
  # second parent fails the demo), its alerts lines of it.
  if [ "$1" = --incident ]; then incident=1; shift; fi
  if [ "$1" = --pod ]; then POD=$2 SIM=$3 back=$4; shift 4; else wait_hold; fi
  settle
  local sc=$1 alert=$2 want=$3 desc=$4 says=${5:-} line got
  banner "$sc: $desc" "expect $alert on $POD -> $want${says:+: $says}"
  line=$(wc -l <"$tmp/responder.out")
  "$switch" "$sc"
  local t0=$SECONDS
  waitfor "$TIMEOUT" "a diagnosis of $alert" has_verdict "$line" "$alert" || true
  got=$(verdict_after "$line" "$alert")
  if [ -n "$says" ] && [ "$got" = "$want" ] && [[ "$(title_after "$line" "$alert")" != *"$says"* ]]; then
    got="$got, not saying \"$says\""
  fi
  local note="" parents members
  if [ "$incident" = 1 ]; then
    # The other pods' alerts join as they fire (a minute at most after the first).
    waitfor 60 "the model's alerts on every pod to join its incident" incident_joined "$line" 4 || true
    read -r parents members < <(incidents_after "$line" "namespace=\"$NS\"")
    note="; $parents parent(s) for the model, $members alerts as its lines"
    [ "$parents" = 1 ] || { got="$got, $parents parents"; }
  fi
  conclude "$sc" "$alert" "$got" "$want" "$t0" "$line" "$note"
}
# incident_joined LINE N: an incident opened after line LINE has N alerts or more.
incident_joined() { local p m; read -r p m < <(incidents_after "$1" "namespace=\"$NS\""); [ "$m" -ge "$2" ]; }

# run_triage scenario expected-verdict description: on-demand triage of pod 0 (as /vllm triage),
# every 5 s until it gives the verdict (or DEMO_TIMEOUT seconds); its answer is shown.
run_triage() {
  local sc=$1 want=$2 desc=$3 line got="" out=""
  wait_hold
  settle
  banner "$sc: $desc" "expect on-demand triage of $POD -> $want"
  line=$(wc -l <"$tmp/responder.out")
  scenario "$sc"
  local t0=$SECONDS
  while [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
    sleep 5
    out=$(bin/responder triage --config "$tmp/responder.yaml" --label "pod=$POD" --label "namespace=$NS" 2>&1) || continue
    got=$(printf '%s\n' "$out" | sed -n 's/^verdict: *//p')
    [ "$got" = "$want" ] && break
  done
  printf '%s\n' "$out"
  conclude "$sc" "(triage)" "$got" "$want" "$t0" "$line"
}

# run_healthy seconds: every pod's load healthy for that long, and nothing should fire.
run_healthy() {
  settle
  banner "healthy: every pod serves a healthy load (pod 0 the one it holds, the others 4 req/s of short prompts). Nothing should fire (held $1s)."
  local t0=$SECONDS
  while [ $((SECONDS - t0)) -lt "$1" ]; do sleep 1; done
  if no_alerts; then results+=("healthy          no alerts                      ok"); else
    results+=("healthy          alerts fired: $(alerts_of_pod)          UNEXPECTED"); failed=1
  fi
}

# The walk, in order, one entry a step: "step WALK command...". WALK short: the step is in the
# short walk (the default: each kind of verdict once) and in the full one; full: in the full walk
# only (DEMO_WALK=full, make demo-full). A new scenario is one more entry. Each step starts with
# every pod back at rest and every alert resolved (settle), a step that changes pod 0's load once
# pod 0's hold is over (wait_hold); the healthy check and a step on another vllm-sim (--pod) may
# run during the hold. With DEMO_ONLY, only the steps whose line names it.
steps=0 walk_t0=$SECONDS
step() {
  local walk=$1
  shift
  [ "$walk" = short ] || [ "$WALK" = full ] || return 0
  [ -z "$ONLY" ] || [[ " $* " == *" $ONLY "* ]] || return 0
  steps=$((steps + 1))
  "$@"
}
# The collapse is judged against the recent past (a fresh Prometheus has no day-old baseline):
# the six playbook windows (3m here) before the window. 120s of shared-prefix chat, with the 90s
# of shared prompts prefix-collapse starts with, fill them before its template changes.
step short hold shared-prefix 120 \
  "chat clients sharing a long system prompt, ~90% served by the prefix cache (the recent past)"
# Meanwhile: nothing fires under healthy load, and on the second ring's decode pod (namespace
# demo-ring, an incident of its own) the KV transfer stalls.
step short run_healthy 30
step short run_scenario --pod vllm-ring-kv "$SIM_KV" healthy kv-transfer-stuck VLLMKVTransferFailing kv-transfer-stalled \
  "a decode pod of disaggregated serving loads each prompt's KV from the prefill side; 30s in, the prefill side stops answering: requests wait deferred, loads never complete or fail."
step short run_scenario prefix-collapse VLLMTimeToFirstTokenP99High prefix-cache-collapse \
  "chat prompts sharing a system prompt (90% cache hits) for 90s, then a template change puts a request id on top: same prompts, no hits."
step short run_scenario --fleet --incident overload VLLMTimeToFirstTokenP99High capacity-past-knee \
  "70 req/s on every pod, about twice capacity: the whole model queues without bound; the three pods are all Deployment vllm-demo's HPA may have (max 3)." \
  "HPA vllm-demo is at its ceiling (3 of max 3)"
step short run_scenario kv-pressure VLLMKVCacheNearFull kv-pressure \
  "a burst of long requests fills the KV cache; the scheduler preempts, but vLLM counts a preemption only when its request resumes."
step full run_scenario long-prompts VLLMTimeToFirstTokenP99High prefill-bound \
  "~5000-token prompts: prefill time dominates TTFT, no queue."
step full run_scenario wide-batch VLLMInterTokenLatencyP99High decode-bound \
  "~200 requests decoding at once: every decode step is slower."
step full run_scenario client-timeouts VLLMRequestAbortRateHigh client-aborts \
  "healthy load, but 40% of clients give up after 0.5-2.5s (vLLM counts none of them as aborted)."
step full run_scenario --fleet engine-stall VLLMEngineStalled engine-stalled \
  "healthy load on three pods; the engine of pod 0 wedges: its queue grows, it computes nothing, /health still 200."
step full run_scenario --fleet router-imbalance VLLMTimeToFirstTokenP99High load-imbalance \
  "60 req/s over three pods, but the router sends pod 0 eight shares to each sibling's one."
step short run_scenario engine-hang VLLMEngineStalled engine-stalled \
  "healthy load; 20s in, pod 0's engine core stops (a hang in a step, a GPU fault, a collective hang): every vllm: series freezes, a few requests running and none waiting, /metrics and /health still answer."
step full run_triage restart-loop engine-restarting \
  "healthy load; pod 0's server dies 40s after each start and is down 15s (CrashLoopBackOff): scrapes fail, counters reset."
step full run_triage sleep engine-paused \
  "healthy load; 20s in, an operator puts pod 0's engine to sleep (level 1): paused on purpose, not stalled; do not restart it."
step full run_scenario frontend-bound VLLMTimeToFirstTokenP99High frontend-bound \
  "20 req/s with a heavy chat template: the API server's one core saturates; TTFT grows outside queue and prefill."
# The hardware ring, on its own pod and namespace (its alerts are not the model's: the next step
# does not wait them out): 20s in, rank 1's GPU falls off the bus; the engine core hangs in the
# collective, then dies at vLLM's RPC deadline. VLLMGPUFault (fault gpu-lost) names the GPU.
step full run_scenario --pod "$POD_GPU" "$SIM_GPU" healthy gpu-xid79 VLLMGPUFault gpu-fault \
  "a TP=2 pod on node $NODE_GPU; 20s in, the GPU of rank 1 falls off the bus (XID 79): its dcgm-exporter series vanish, the engine core hangs in the collective until vLLM's RPC deadline." \
  "fell off the bus"
step full run_scenario --pod vllm-ring-spec "$SIM_SPEC" spec-decode spec-decode-acceptance-drop VLLMSpecDecodeAcceptanceDropped spec-decode-regression \
  "speculative decoding with 3 draft tokens accepting 80% a position; 90s in, new traffic accepts 10%: each step gives fewer tokens, ITL barely moves."

banner "summary: the $WALK walk, $steps steps in $((SECONDS - walk_t0))s"
printf '  %s\n' "${results[@]}"
if [ "$WALK" = short ]; then
  echo
  echo "This was the short walk: each kind of verdict once. The full walk (every scenario, about 35"
  echo "minutes): make demo-full (or DEMO_WALK=full scripts/demo.sh)."
fi
if [ "$STAY" = 1 ]; then
  echo
  echo "Everything keeps running. Switch scenarios yourself, e.g.:"
  echo "  curl -XPOST http://$SIM/admin/scenario -d '{\"scenario\":\"overload\"}'"
  echo "  (also engine-hang-queued, weight-update, restart-loop, sleep; then bin/responder triage --config $tmp/responder.yaml --label pod=$POD)"
  echo "Ctrl-C stops the demo."
  while :; do sleep 3600; done
fi
exit "$failed"
