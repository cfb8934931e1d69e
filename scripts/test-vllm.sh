#!/usr/bin/env bash
# make test-vllm: vllm-sim checked against a real vLLM, the behaviour checks of docs/vllm-facts.md
# and the end-to-end verdicts on the real server. Sets the real vLLM up first (cached in
# .real-vllm/, see scripts/real-vllm.sh) and fails, never skips, when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/real-vllm.sh setup
# One package at a time: each starts its own vLLM, and the machine has 2 cores.
echo "== real vLLM: conformance of vllm-sim and behaviour checks"
go test -tags realvllm -count=1 -p 1 -timeout 30m -v ./internal/realvllm/
echo "== real vLLM: end to end"
go test -tags realvllm -count=1 -p 1 -timeout 40m -v -run 'TestRealVLLM' ./cmd/responder/
echo "== real vLLM: the stall probe"
go test -tags realvllm -count=1 -p 1 -timeout 20m -v -run 'TestTheProbeOnARealVLLM' ./probe/
