#!/usr/bin/env bash
# Builds Prometheus 3 and its promtool from the Go module pinned in internal/testenv/prometheus3
# (a module of its own, so the responder's go.mod keeps only the packages it imports) into
# bin/prometheus3/ (ignored by git), once: a later run finds the binaries and prints their folder.
# About 5 minutes on 2 cores the first time. Used by scripts/test.sh when PROMETHEUS3=1.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=internal/testenv/prometheus3
version=$(awk '$1 == "github.com/prometheus/prometheus" {print $2}' "$mod/go.mod")
# Module v0.MMm.p is Prometheus 3.m.p (v0.316.0 = 3.16.0).
release=$(echo "$version" | sed -E 's/^v0\.3([0-9]{2})\.([0-9]+).*/3.\1.\2/; s/^3\.0/3./')
out="$PWD/bin/prometheus3/$version"
if [ ! -x "$out/prometheus" ] || [ ! -x "$out/promtool" ]; then
	echo "building Prometheus $release ($version) from its Go module into $out" >&2
	mkdir -p "$out"
	ldflags="-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Branch=module -X github.com/prometheus/common/version.Revision=$version"
	(cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus &&
		CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool)
	mv "$out/prometheus.tmp" "$out/prometheus"
	mv "$out/promtool.tmp" "$out/promtool"
fi
echo "$out"
