# Reading the responder's console output in the demo (sourced by scripts/demo.sh; tested by
# scripts/demo_console_test.go). CONSOLE names the file, POD the pod whose diagnoses count.
#
# Every reader here takes the file itself: never `tail ... | awk '... exit'`. Under `set -o
# pipefail` a producer killed by a pipe its reader closed (SIGPIPE, status 141) fails the caller,
# and the larger the output the likelier: that ended `make demo` half-way once.

# verdict_after LINE ALERT prints the verdict of the first diagnosis of ALERT on $POD after line
# LINE of the console output (nothing when there is none yet).
verdict_after() {
  awk -v from="$1" -v a="$2" -v p="pod=\"$POD\"" 'NR <= from { next }
      $1 ~ /^VLLM/ { hit = ($1 == a && index($0, p) > 0); next } hit && $1 == "resolved" { hit = 0 }
      hit && $1 == "verdict:" { print $2; exit }' "$CONSOLE"
}

# title_after LINE ALERT prints the title (the line after the verdict) of the first diagnosis of
# ALERT on $POD after line LINE of the console output (nothing when there is none yet).
title_after() {
  awk -v from="$1" -v a="$2" -v p="pod=\"$POD\"" 'NR <= from { next }
      $1 ~ /^VLLM/ { hit = ($1 == a && index($0, p) > 0); next } hit && $1 == "resolved" { hit = 0 }
      hit && next_is_title { sub(/^ +/, ""); print; exit } hit && $1 == "verdict:" { next_is_title = 1 }' "$CONSOLE"
}

# resolved_since LINE: every alert that fired after line LINE of the console output was resolved.
resolved_since() {
  awk -v from="$1" 'NR > from && /^\[FIRING\]/ { f++ } NR > from && /^\[RESOLVED\]/ { r++ }
      END { exit !(r + 0 >= f + 0) }' "$CONSOLE"
}

# incidents_after LINE [KEY] prints how many incidents the console shows after line LINE (each is
# one parent: one Slack thread, whichever alert opened or reopened it), of those whose key holds
# KEY (namespace="demo") when given, and how many alerts the largest of them has, e.g. "1 6".
incidents_after() {
  awk -v from="$1" -v key="${2:-}" 'NR <= from { next }
      $1 == "incident" && index($0, key) > 0 {
        seen[$2] = 1
        if (match($0, /\([0-9]+ alerts?/)) { n = substr($0, RSTART + 1, RLENGTH - 1) + 0; if (n > most[$2]) most[$2] = n }
      }
      END { p = 0; m = 0; for (id in seen) { p++; if (most[id] > m) m = most[id] } print p, m }' "$CONSOLE"
}
