#!/usr/bin/env bash
# The README's test command (make test): installs what is missing, starts a shared redis-server on
# a loopback port of its own, runs vet, the rule tests and every Go test with -race, and stops it.
# Tests that need their own Prometheus or Alertmanager (per-test data and config) start them
# through internal/testenv.
#
# PROMETHEUS3=1 make test: the same run against Prometheus 3 instead of Debian's 2.42. It builds
# Prometheus 3 and its promtool from the Go module pinned in internal/testenv/prometheus3 (about
# 5 minutes on 2 cores the first time, then cached in bin/prometheus3/) and points the rule tests
# (promtool) and every test that starts a Prometheus (internal/testenv: PROMETHEUS_BIN,
# PROMTOOL_BIN) at it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if [ "${PROMETHEUS3:-}" = 1 ]; then
	p3=$(scripts/prometheus3.sh)
	export PROMETHEUS_BIN="$p3/prometheus" PROMTOOL_BIN="$p3/promtool" PATH="$p3:$PATH"
	echo "== Prometheus 3: $("$PROMETHEUS_BIN" --version 2>&1 | awk "NR == 1")"
fi

tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 16379)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$tmp" --daemonize yes --pidfile "$tmp/redis.pid" >/dev/null
cleanup() { [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
for _ in $(seq 1 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export REDIS_ADDR="127.0.0.1:$port"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
echo "== alert rules (promtool; their Go packages run with every other below)"
RULES_GO_TESTS=0 deploy/prometheus/test.sh
echo "== helm chart (lint, render, strict decoding into k8s.io/api types)"
deploy/helm/test.sh
echo "== Teams cards (the Adaptive Cards JS library parses and renders every golden card)"
# Pinned in notify/teams/cardcheck/package-lock.json; npm ci installs exactly that.
(cd notify/teams/cardcheck && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
	node check.cjs ../testdata/cards && node check.cjs --bad bad)
echo "== built-in playbook fixtures"
go run ./cmd/responder playbooks test playbooks/tests
echo "== go test -race"
go test -race -count=1 -timeout 20m ./...
echo "== fuzz (bounded: FUZZEXECS executions per target)"
scripts/fuzz.sh
