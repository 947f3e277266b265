#!/bin/sh
# cli_tour: the README's five-minute tour, run as written. The commands are
# read from the README's tour block (README.md, "A five-minute tour"), in
# order, and each must be one this test knows: a command added to the
# README without a check here, or a check whose command left the README,
# fails the test. Each runs with `sh -c` from a folder where build/ is the
# binary's folder and examples/ the source's, against `xpool dev` with the
# README's cluster and its local agent (what `make run` starts), and its
# exit status and a key line of its output (stdout and stderr together)
# are checked. Where the tour assumes a moment has passed (job 5's output),
# the test waits for that condition first, never for a fixed time.
# Skips (exit 77) when `xpool dev` is absent.
# usage: cli_tour.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$(cd "$3" && pwd)

. "$SRC/tests/devlib.sh"
need_dev
start_dev --cluster "$SRC/examples/clusters/mixed.yaml"
HOST=$(hostname)

# the local agent's node is registered and ready before the tour begins
i=0
until "$XP" nodes 2>/dev/null | grep -q "^$HOST  *ready  *agent"; do
	i=$((i + 1))
	[ "$i" -le 300 ] || { echo "FAIL: the local agent's node $HOST is not ready in 30 s: $(cat "$T/dev.err")"; exit 1; }
	sleep 0.1
done

W=$T/tour
mkdir -p "$W"
ln -s "$(cd "$(dirname "$XP")" && pwd)" "$W/build"
ln -s "$SRC/examples" "$W/examples"

# The tour's commands: the ```sh block after the heading, continuation
# lines joined, comments and the export line dropped, one per line.
awk '
	/^## A five-minute tour/ { tour = 1; next }
	tour && /^```sh/ { inblock = 1; next }
	inblock && /^```/ { exit }
	inblock {
		line = $0
		if (pending != "") { sub(/^ +/, "", line); line = pending " " line; pending = "" }
		if (line ~ /\\$/) { sub(/ *\\$/, "", line); pending = line; next }
		sub(/  +#.*$/, "", line)
		if (line ~ /^#/ || line ~ /^ *$/ || line ~ /^export XPOOL_ADDR/) next
		print line
	}' "$SRC/README.md" >"$T/tour.cmds"
[ -s "$T/tour.cmds" ] || { echo "FAIL: no tour block found in README.md"; exit 1; }

# What each command must do: EXIT|WAIT|REGEX|COMMAND. WAIT: "-" or
# JOB=STATE, a condition met before it runs (at most 60 s). REGEX: an
# extended regular expression one line of its output matches ("-": any).
cat >"$T/tour.checks" <<'EOF'
0|-|^job 1 submitted \(train|build/xpool submit --name train --gpus 2 --model A100-SXM4-80GB --cpu 8 --memory 32Gi --duration 1m -- python train.py
0|-|^job 2 submitted \(infer|build/xpool submit --name infer --gpus 1 --fraction 0.3 --device-memory 8Gi --duration 30s -- ./serve
1|-|the most on one node is 8 \(gpu-a100-0\)|build/xpool submit --name huge --gpus 16
1|-|did you mean A100-SXM4-80GB\?|build/xpool submit --gpus 1 --model a100-80gb
0|-|^job 3 submitted \(huge|build/xpool submit --name huge --gpus 16 --hold-for-nodes
0|-|^3 +huge +admin +default +pending +- +[0-9]+s +NoMatchingDevice$|build/xpool jobs
0|-|^job 3 is pending \(NoMatchingDevice\): it fits on none of 13 nodes now$|build/xpool explain 3
0|-|^gpu-a100-0 +ready +emulated|build/xpool nodes
0|-|A100-SXM4-80GB|build/xpool devices --node gpu-a100-0
0|-|^job 4 submitted \(resnet|build/xpool submit -f examples/jobs/train.yaml
0|-|job\.[a-z]+|build/xpool events --since 0 | tail -n 5
0|-|^job 5 submitted|build/xpool submit --node $(hostname) --cpu 1 --memory 256Mi -- sh -c 'echo hello from $XPOOL_NODE; nproc'
0|5=succeeded|^hello from HOST$|build/xpool logs 5
0|-|^Source: +agent$|build/xpool node $(hostname)
0|-|^queue team-a created|build/xpool queue create team-a --guarantee gpu=8 --max gpu=16
0|-|^queue team-b created|build/xpool queue create team-b --guarantee gpu=8
0|-|^job 6 submitted|build/xpool submit --queue team-b --gpus 1 --duration 1h -- sleep 3600
0|6=running|^team-b .*gpu 1/8/-|build/xpool queues
0|-|^  job 7 fetch|build/xpool submit -f examples/workflows/nightly.yaml
0|-|^10 +alert +pending +not-ok:8 |build/xpool jobs --workflow nightly
0|-|^job 11 submitted \(eval|build/xpool submit --name eval --gpus 1 --time-limit 2:00:00 --qos best-effort --after 6 -- ./eval
0|-|^job 11 released$|build/xpool hold 11; build/xpool update 11 --priority 5; build/xpool release 11
0|-|^job 3 cancelled$|build/xpool cancel --name huge
0|-|-|printf 'currency: EUR\ncpu: 0.04\nmemory: 0.005\nenergy: 0.2\ndevices: {A100-SXM4-80GB: 3, default: 1}\n' > prices.yaml
0|-|^price table set|build/xpool prices set prices.yaml
0|-|^job 2 counters updated|build/xpool count 2 inference_requests=1200
0|-|^admin |build/xpool cost --by tenant --since 7d
0|-|-|build/xpool cost --by job --csv > usage.csv
0|-|-|build/xpool alerts
0|-|gpu-a100-0|build/xpool top --once
0|-|not enough history|build/xpool forecast; build/xpool advise
EOF

# the README's commands and the checks: the same, in the same order
cut -d'|' -f4- "$T/tour.checks" >"$T/checked.cmds"
if ! cmp -s "$T/tour.cmds" "$T/checked.cmds"; then
	echo "FAIL: the README's tour and this test's checks differ (< README, > test):"
	diff "$T/tour.cmds" "$T/checked.cmds"
	exit 1
fi

wait_job() { # wait_job ID STATE
	i=0
	until "$XP" job "$1" -o json 2>/dev/null | grep -q "\"state\": \"$2\""; do
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then
			fail "job $1 did not become $2 in 60 s: $("$XP" job "$1" 2>&1)"
			return 1
		fi
		sleep 0.1
	done
}

n=0
while IFS='|' read -r want wait re cmd; do
	n=$((n + 1))
	if [ "$wait" != "-" ]; then
		wait_job "${wait%%=*}" "${wait#*=}" || continue
	fi
	(cd "$W" && sh -c "$cmd") >"$T/step.out" 2>&1
	got=$?
	cp "$T/step.out" "$T/step.$n"
	if [ "$got" != "$want" ]; then
		fail "tour step $n: '$cmd' exited $got, want $want: $(head -c 600 "$T/step.out")"
		continue
	fi
	re=$(printf '%s' "$re" | sed "s/HOST/$HOST/")
	if [ "$re" != "-" ] && ! grep -Eq -- "$re" "$T/step.out"; then
		fail "tour step $n: '$cmd': no line matches /$re/: $(head -c 800 "$T/step.out")"
	fi
done <"$T/tour.checks"

# what the README shows of `build/xpool jobs` is what it printed (ages aside)
awk '/^What `build\/xpool jobs` printed there/ { f = 1; next }
	f && /^```$/ { if (in_b) exit; in_b = 1; next }
	in_b { print }' "$SRC/README.md" | sed -E 's/ [0-9]+[smhd] / AGE /' >"$T/readme.jobs"
sed -E 's/ [0-9]+[smhd] / AGE /' "$T/step.6" >"$T/tour.jobs"
[ -s "$T/readme.jobs" ] && cmp -s "$T/readme.jobs" "$T/tour.jobs" ||
	fail "README's jobs output differs from what the tour printed: $(diff "$T/readme.jobs" "$T/tour.jobs")"
# TOUR_OUT=DIR keeps each step's output (to refresh the README's)
[ -n "${TOUR_OUT:-}" ] && cp "$T"/step.* "$TOUR_OUT"/ 2>/dev/null
[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_tour: all $n commands of the README's tour ran as written"
