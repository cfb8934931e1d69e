#!/usr/bin/env bash
# Builds Jaeger (v2: the OpenTelemetry Collector based `jaeger` binary, all-in-one with memory
# storage) from the nested Go module tools/jaeger, the version its go.mod pins, into
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/vllm-responder/jaeger-<version>/jaeger
#
# where internal/testenv and scripts/demo.sh find it, and prints that path. Only the first build
# on a machine pays (about 5 minutes and 120 MB on 2 cores); afterwards it is a no-op.
# scripts/deps.sh calls it, so `make test` and `make demo` build it on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/../tools/jaeger"
version=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2 }' go.mod)
[ -n "$version" ] || { echo "tools/jaeger/go.mod does not require github.com/jaegertracing/jaeger" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vllm-responder/jaeger-$version"
if [ ! -x "$cache/jaeger" ]; then
  echo "building jaeger $version from tools/jaeger into $cache (first time only: several minutes)" >&2
  mkdir -p "$cache"
  go build -trimpath -ldflags "-s -w" -o "$cache/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
  mv "$cache/jaeger.tmp" "$cache/jaeger"
fi
echo "$cache/jaeger"
