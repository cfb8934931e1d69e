#!/usr/bin/env bash
# Installs the real peers the tests and the demo run (Debian packages, and Jaeger built from its
# Go module), when missing.
set -euo pipefail
need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# Node and npm run the Teams card check (notify/teams/cardcheck).
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# python3 runs the receiver snippet of docs/deploy.md (notify/webhook).
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  # Debian's packages start system services on install where a init system runs; the tests start
  # their own on loopback ports, so stop those if they came up.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
for b in prometheus promtool prometheus-alertmanager redis-server node npm python3; do
  command -v "$b" >/dev/null || { echo "missing $b after install" >&2; exit 1; }
done
# Jaeger is not a Debian package: it is built from its Go module (tools/jaeger) once per machine.
"$(dirname "$0")/jaeger.sh" >/dev/null
