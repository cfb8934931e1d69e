#!/usr/bin/env bash
# make bench: builds the responder and the harness, then runs bench/cmd/benchrun, which starts a
# real Prometheus (recorded vLLM series), the responder as a subprocess and a bare baseline handler,
# all on loopback, prints one table and writes BENCHMARKS.md. Bounded: benchrun's -timeout (18
# minutes by default; each phase has its own cap within it, and a phase with too little time
# left is not run and named in the table), and this script kills it a minute after that.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/responder" ./cmd/responder
go build -o "$tmp/benchrun" ./bench/cmd/benchrun
timeout 19m "$tmp/benchrun" --repo . --responder "$tmp/responder" --out BENCHMARKS.md "$@"
