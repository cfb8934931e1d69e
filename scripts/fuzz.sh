#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (FUZZTIME each, default 10s; four targets, about 50s
# in all once the build cache is warm, plus the instrumented builds the first time). Plain
# `go test` already runs each target's seeds and its committed corpus (testdata/fuzz/FuzzX/);
# this explores beyond them. A failure leaves the crashing input under
# testdata/fuzz/FuzzX/ for `go test -run=FuzzX/<name>` to replay: commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${FUZZTIME:-10s}"
fuzz() { # target package
	echo "fuzz: $1 ($2, $t)"
	go test -run='^$' -fuzz="^$1\$" -fuzztime="$t" "$2"
}
fuzz FuzzDecodeMessage ./handlers
fuzz FuzzParseCommand ./handlers/slackapp
fuzz FuzzScopeMatchers ./playbooks
fuzz FuzzParse ./playbooks
