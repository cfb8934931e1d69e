#!/usr/bin/env bash
# Checks the vLLM alert rules and the Alertmanager example. Run from anywhere:
#   deploy/prometheus/test.sh
# Needs go and promtool (Debian package prometheus); amtool (prometheus-alertmanager) is used when present.
# deploy/alertmanager/amcheck (a nested Go module) loads every Alertmanager config of the repo.
# Exits non-zero on the first failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

command -v promtool >/dev/null || { echo "test.sh: promtool not found: apt-get install prometheus" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step() { printf '\n== %s\n' "$*"; }

step "committed rules are up to date with vllm-alerts.rules.yml.tmpl + profiles.yaml"
go run ./cmd/rulegen -profile production -check deploy/prometheus/vllm-alerts.rules.yml
go run ./cmd/rulegen -profile fast -check deploy/prometheus/vllm-alerts.fast.rules.yml
go run ./cmd/rulegen -profile kserve -check deploy/prometheus/vllm-alerts.kserve.rules.yml
echo ok

step "the fast variant renders from scratch"
go run ./cmd/rulegen -profile fast -o "$tmp/fast.rules.yml"
go run ./cmd/rulegen -profile sim -o "$tmp/sim.rules.yml"

step "promtool check rules"
promtool check rules deploy/prometheus/vllm-alerts.rules.yml deploy/prometheus/vllm-alerts.fast.rules.yml deploy/prometheus/vllm-alerts.kserve.rules.yml "$tmp/fast.rules.yml" "$tmp/sim.rules.yml"

step "promtool test rules (production)"
promtool test rules deploy/prometheus/tests/*.yml

step "promtool test rules (fast)"
promtool test rules deploy/prometheus/tests/fast/*.yml

step "alertmanager configs: loaded and routed by Alertmanager's own Go packages (v0.35: knows update_message)"
(cd deploy/alertmanager/amcheck && go test -count=1 ./...)

step "alertmanager example (amtool; the beside-slack-*.yml files use update_message, which Debian's amtool 0.25 predates)"
if command -v amtool >/dev/null; then
	am=deploy/alertmanager/alertmanager.yml
	amtool check-config "$am"
	for a in VLLMTimeToFirstTokenP99High VLLMInterTokenLatencyP99High VLLMSpecDecodeAcceptanceDropped VLLMKVCacheNearFull VLLMRequestAbortRateHigh VLLMKVTransferFailing VLLMQueueDepthHigh VLLMEngineStalled VLLMGPUFault; do
		amtool config routes test --config.file="$am" --verify.receivers=vllm-responder,default \
			alertname="$a" namespace=llm model_name=m pod=p 2>/dev/null
	done
	amtool config routes test --config.file="$am" --verify.receivers=default alertname=NodeDown 2>/dev/null
else
	echo "amtool not found (apt-get install prometheus-alertmanager): skipped"
fi

# make test runs these two packages with every other (go test -race ./...) and sets
# RULES_GO_TESTS=0 so that they run once there, not twice.
if [ "${RULES_GO_TESTS:-1}" = 1 ]; then
	step "go tests (rulegen, rules package)"
	go test -race -count=1 ./cmd/rulegen ./deploy/prometheus
fi

printf '\nall checks passed\n'
