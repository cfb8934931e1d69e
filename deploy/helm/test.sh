#!/usr/bin/env bash
# Checks the Helm chart, exiting non-zero on failure:
#   1. helm lint (default values + redis.url, and ci/all-on-values.yaml);
#   2. helm template with the default values fails without redis.url, with a message saying so;
#   3. helm template for the default values (+ redis.url) and for ci/all-on-values.yaml;
#   4. the chartcheck Go tests (a nested module, so k8s.io stays out of the main go.mod): every
#      rendered document decodes strictly into its k8s.io/api type, Prometheus Operator resources
#      have their required fields, the rendered config loads with the responder's loader, the
#      copies in files/ are up to date and the dashboard only queries exported metrics.
#
# helm: $HELM if set, else `helm` on PATH if it is v3, else built once from its Go module into
# ${XDG_CACHE_HOME:-~/.cache}/vllm-responder/helm-$HELM_VERSION (1-3 minutes on 2 cores, then cached).
set -euo pipefail
cd "$(dirname "$0")"
HELM_VERSION=${HELM_VERSION:-v3.22.0}
chart=vllm-responder

find_helm() {
	if [ -n "${HELM:-}" ]; then echo "$HELM"; return; fi
	if command -v helm >/dev/null 2>&1 && helm version --short 2>/dev/null | grep -q '^v3\.'; then
		command -v helm; return
	fi
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/vllm-responder/helm-$HELM_VERSION"
	if [ ! -x "$dir/helm" ]; then
		echo "building helm $HELM_VERSION from its Go module into $dir (once)" >&2
		mkdir -p "$dir"
		# Outside any module, so the responder's go.mod is not touched.
		(cd "$dir" && GOFLAGS=-mod=mod GOBIN="$dir" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >&2
	fi
	echo "$dir/helm"
}
helm=$(find_helm)
echo "helm: $helm ($("$helm" version --short))"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The defaults need only a Redis (2 replicas); everything else has a default.
defaults=(--set redis.url=redis://redis.monitoring.svc:6379/0)

echo "== helm lint"
"$helm" lint --strict "$chart" "${defaults[@]}"
"$helm" lint --strict "$chart" -f "$chart/ci/all-on-values.yaml"

echo "== helm template: 2 replicas without Redis must fail with a clear message"
if "$helm" template t "$chart" >"$out/fail.out" 2>&1; then
	echo "FAIL: rendering 2 replicas without redis.url succeeded"; exit 1
fi
grep -q 'with 2 or more replicas the responder needs shared state' "$out/fail.out" ||
	{ echo "FAIL: unexpected error:"; cat "$out/fail.out"; exit 1; }
"$helm" template t "$chart" --set replicaCount=1 >/dev/null

echo "== helm template"
mkdir -p "$out/rendered"
"$helm" template vllm-responder "$chart" -n monitoring "${defaults[@]}" >"$out/rendered/default.yaml"
"$helm" template vllm-responder "$chart" -n monitoring -f "$chart/ci/all-on-values.yaml" >"$out/rendered/all-on.yaml"
"$helm" template vllm-responder "$chart" -n monitoring --set replicaCount=1 >"$out/rendered/single.yaml"
wc -l "$out"/rendered/*.yaml

echo "== chartcheck (strict decoding into k8s.io/api types)"
(cd chartcheck && CHARTCHECK_RENDERED="$out/rendered" go test -count=1 ./...)
