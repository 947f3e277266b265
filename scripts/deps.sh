#!/bin/sh
# Installs the Debian 12 packages that building, testing and benchmarking
# xpool need (jq: bench/controller_real.sh; curl: the scripted tests' HTTP
# calls; prometheus and promtool:
# tests/cli_prometheus.sh scrapes /metrics with a real server; chromium:
# tests/cli_ui.sh loads the dashboard headless).
# Idempotent: when every package is present it prints one line and changes
# nothing. Needs root (or sudo) only when something is missing.
set -eu

PKGS="build-essential cmake pkg-config
libcmocka-dev libyaml-dev libjansson-dev
libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev
libhwloc-dev
jq curl prometheus chromium"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
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
