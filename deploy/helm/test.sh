#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/vllm-responder, exiting non-zero on failure.
#
# Always: the chartcheck Go tests (deploy/helm/chartcheck, a nested module so that helm and
# k8s.io stay out of the responder's go.mod). They render the chart with helm's own Go packages
# (chart loader, engine, lint: the code behind `helm template` and `helm lint --strict`) for the
# default values (+ redis.url), ci/all-on-values.yaml (every option on) and one replica; check
# that two replicas without Redis and other misconfigurations fail with a clear message; decode
# every rendered document strictly into its k8s.io/api type (apps/v1, core/v1, policy/v1,
# networking/v1; PrometheusRule and ServiceMonitor as unstructured, required fields checked);
# load the rendered config with the responder's own loader; check that the copies in files/ are
# up to date and that the Grafana dashboard queries only metrics the service exports.
#
# Also, when a helm v3 CLI is at hand ($HELM, `helm` on PATH, or one built earlier by
# HELM_BUILD=1 into ~/.cache/vllm-responder/helm-$HELM_VERSION): `helm lint --strict` and
# `helm template` with the CLI, and the same checks on the CLI's output. HELM_BUILD=1 builds the
# CLI from its Go module when there is none (several minutes on 2 cores, then cached).
set -euo pipefail
cd "$(dirname "$0")"
HELM_VERSION=${HELM_VERSION:-v3.22.0}
chart=vllm-responder
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vllm-responder/helm-$HELM_VERSION"

echo "== chartcheck: helm lint and template in-process, strict decoding into k8s.io/api types"
(cd chartcheck && go test -count=1 ./...)

helm=""
if [ -n "${HELM:-}" ]; then
	helm=$HELM
elif command -v helm >/dev/null 2>&1 && [[ "$(helm version --short 2>/dev/null)" == v3.* ]]; then
	helm=$(command -v helm)
elif [ -x "$cache/helm" ]; then
	helm=$cache/helm
elif [ "${HELM_BUILD:-}" = 1 ]; then
	echo "building helm $HELM_VERSION from its Go module into $cache"
	mkdir -p "$cache"
	# Outside any module, so no go.mod is touched.
	(cd "$cache" && GOFLAGS=-mod=mod GOBIN="$cache" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
	helm=$cache/helm
fi
if [ -z "$helm" ]; then
	echo "== helm CLI: none found (set HELM, put helm v3 on PATH, or HELM_BUILD=1); in-process checks only"
	exit 0
fi
echo "== helm CLI: $helm ($("$helm" version --short))"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The same value sets as chartcheck's valueSets.
default=(--set redis.url=redis://redis.monitoring.svc:6379/0)
allon=(-f "$chart/ci/all-on-values.yaml")
single=(--set replicaCount=1)

"$helm" lint --strict "$chart" "${default[@]}"
"$helm" lint --strict "$chart" "${allon[@]}"
if "$helm" template t "$chart" >"$out/fail.out" 2>&1; then
	echo "FAIL: rendering 2 replicas without redis.url succeeded"; exit 1
fi
grep -q 'with 2 or more replicas the responder needs shared state' "$out/fail.out" ||
	{ echo "FAIL: unexpected error:"; cat "$out/fail.out"; exit 1; }

mkdir -p "$out/rendered"
"$helm" template vllm-responder "$chart" -n monitoring "${default[@]}" >"$out/rendered/default.yaml"
"$helm" template vllm-responder "$chart" -n monitoring "${allon[@]}" >"$out/rendered/all-on.yaml"
"$helm" template vllm-responder "$chart" -n monitoring "${single[@]}" >"$out/rendered/single.yaml"
(cd chartcheck && CHARTCHECK_RENDERED="$out/rendered" go test -count=1 -run 'Rendered|Responder|Services|UserPlaybooks' ./...)
