#!/usr/bin/env bash
# Runs every fuzz target for a bounded number of executions (FUZZEXECS each, default 20000).
# Plain `go test` already runs each target's seeds and its committed corpus
# (testdata/fuzz/FuzzX/); this explores beyond them. A failure leaves the crashing input under
# testdata/fuzz/FuzzX/ for `go test -run=FuzzX/<name>` to replay: commit it with the fix.
#
# The budget is a count (-fuzztime=Nx), not a duration: with a duration, Go 1.26's fuzz
# coordinator can report its own deadline as a failure ("context deadline exceeded", no
# crasher written) when a loaded machine starves a worker at the boundary (golang/go#75804,
# fixed in Go 1.27). A count has no deadline to race; on a slow machine it only takes longer.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${FUZZEXECS:-20000}"
fuzz() { # target package
	echo "fuzz: $1 ($2, ${n} execs)"
	# A target that moved away would otherwise fuzz nothing and pass ("no fuzz tests to fuzz").
	if ! go test -list "^$1\$" "$2" | grep -x "$1" >/dev/null; then
		echo "fuzz: no target $1 in $2" >&2
		exit 1
	fi
	go test -run='^$' -fuzz="^$1\$" -fuzztime="${n}x" "$2"
}
fuzz FuzzDecodeMessage ./handlers
fuzz FuzzParseCommand ./notify/slack
fuzz FuzzScopeMatchers ./playbooks
fuzz FuzzParse ./playbooks
fuzz FuzzSampleDecoder ./evidence
