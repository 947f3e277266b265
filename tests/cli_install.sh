#!/bin/sh
# cli_install: `make install`'s layout, staged with DESTDIR (docs/deploy.md):
# the binaries, the interposer, the systemd units with the installed paths
# in them, the config files (kept when they exist); and the installed xpool
# runs (it finds the installed xpoold beside it) and reads the installed
# server.yaml.
# usage: cli_install.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
BUILD=$(dirname "$XP")
. "$SRC/tests/devlib.sh"
D=$T/stage
install_to() { DESTDIR=$D cmake --install "$BUILD" --prefix /opt/xp >"$T/install.out" 2>&1; }
install_to || { echo "FAIL: cmake --install: $(tail -n 5 "$T/install.out")"; exit 1; }
for f in /opt/xp/bin/xpool /opt/xp/bin/xpoold /opt/xp/lib/xpool/libxpool-vgpu.so \
	/lib/systemd/system/xpool-server.service /lib/systemd/system/xpool-agent.service \
	/etc/xpool/server.yaml /etc/xpool/agent.env /opt/xp/share/doc/xpool/deploy.md; do
	[ -e "$D$f" ] || fail "$f was not installed"
done
grep -q "^ExecStart=/opt/xp/bin/xpool server --config /etc/xpool/server.yaml$" \
	"$D/lib/systemd/system/xpool-server.service" || fail "the server unit does not run the installed xpool"
grep -q "XPOOL_VGPU_LIB=/opt/xp/lib/xpool/libxpool-vgpu.so" "$D/lib/systemd/system/xpool-agent.service" ||
	fail "the agent unit does not name the installed interposer"
grep -q '@' "$D/lib/systemd/system/"*.service && fail "a unit kept a @VARIABLE@"
# an edited config survives a second install
echo "# edited" >>"$D/etc/xpool/server.yaml"
install_to || fail "the second install failed"
grep -q "^# edited" "$D/etc/xpool/server.yaml" || fail "the second install replaced an edited server.yaml"
# the installed binary runs, execs the installed xpoold, and takes the installed config
"$D/opt/xp/bin/xpool" server --help >"$T/help" 2>&1 || fail "the installed xpool server --help: $(cat "$T/help")"
grep -q -- "--store" "$T/help" || fail "the installed xpoold has no --store"
sed -e "s|/var/lib/xpool|$T/data|" -e "s|0.0.0.0:7700|127.0.0.1:0|" "$SRC/deploy/etc/server.yaml" >"$T/server.yaml"
"$D/opt/xp/bin/xpool" server --config "$T/server.yaml" >"$T/srv.out" 2>"$T/srv.err" &
PID=$!
until_ok 60 grep -q '^address:' "$T/srv.out" || fail "the installed server with the installed config did not start: $(cat "$T/srv.err")"
stop_server
[ $fails -eq 0 ] || exit 1
echo "ok"
