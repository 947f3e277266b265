#!/bin/sh
# Installs the Debian 12 packages that building, testing and benchmarking
# xpool need (jq: bench/controller_real.sh; curl: the scripted tests' HTTP
# calls; prometheus and promtool:
# tests/cli_prometheus.sh scrapes /metrics with a real server; chromium:
# tests/cli_ui.sh drives the dashboard headless through the DevTools
# protocol, with Node.js and the npm packages pinned in
# tests/ui/package-lock.json; procps: pkill in test_agents; haproxy:
# tests/cli_services.sh routes real requests to service replicas through it;
# etcd-server: the HA store, tests/cli_ha_etcd.sh starts its own members on
# loopback ports; libgnutls28-dev: the controller's TLS and xpool dev's CA,
# and the headers of the client's dlopened GnuTLS - docs/design/tls.md).
# `deps.sh fuzz` (make fuzz) adds clang and its runtime libraries, which
# hold libFuzzer and which --no-install-recommends leaves out.
# Idempotent: when every package is present it prints one line and changes
# nothing. Needs root (or sudo) only when something is missing.
set -eu

PKGS="build-essential cmake pkg-config
libcmocka-dev libyaml-dev libjansson-dev
libsqlite3-dev libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev
libhwloc-dev
jq curl procps prometheus chromium haproxy etcd-server"
if [ "${1:-}" = fuzz ]; then
	PKGS="$PKGS clang-14 libclang-rt-14-dev"
fi
# Node.js: whichever node and npm are on the PATH (some machines carry a
# Node.js whose npm conflicts with Debian's npm package); Debian's only
# when there is none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	PKGS="$PKGS nodejs npm"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# The UI test's npm packages, exactly as locked; again when the lock changes.
npm_deps() {
	ui=$ROOT/tests/ui
	if [ -f "$ui/node_modules/.xp-lock" ] && cmp -s "$ui/package-lock.json" "$ui/node_modules/.xp-lock"; then
		return 0
	fi
	echo "deps: npm ci in tests/ui (test tooling, pinned)"
	if ! (cd "$ui" && npm ci --no-audit --no-fund --loglevel=error); then
		echo "deps: npm ci failed: tests/cli_ui.sh will skip" >&2
		return 0
	fi
	cp "$ui/package-lock.json" "$ui/node_modules/.xp-lock"
}

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	npm_deps
	echo "deps: all build and test packages present"
	exit 0
fi

echo "deps: installing:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "deps: missing packages:$missing; run this script as root" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
npm_deps
