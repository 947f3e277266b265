#!/bin/sh
# cli_client: the client verbs end to end against a real controller. Starts
# `xpool dev` on a free port with the example cluster, then drives it only
# through the CLI: submit (flags and -f YAML), jobs/job/explain/cancel/logs
# with their exit codes, -o json, nodes/devices/queues, cordon, tenants and
# tokens (a second tenant cannot see the first's job), events --since and
# --follow, and the config file. Skips (exit 77, ctest's SKIP_RETURN_CODE) when `xpool dev` is absent.
# usage: cli_client.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev
# emulated nodes only: the local agent's real runs are cli_dev.sh's
start_dev --no-agent --cluster "$SRC/examples/clusters/small.yaml" --overcommit-memory h100-sxm5-80gb=1.5
ADMIN=$XPOOL_TOKEN

# --- nodes, devices, queues ---
run nodes; expect 0 "nodes"
head -n 1 "$T/out" | grep -q '^NAME  *STATE' || fail "nodes header: $(head -n 1 "$T/out")"
[ "$(tail -n +2 "$T/out" | wc -l)" -eq 12 ] || fail "nodes: want the example's 12 nodes: $(cat "$T/out")"
grep -q '^gpu-a100-0  *ready' "$T/out" || fail "nodes: gpu-a100-0 not ready: $(cat "$T/out")"
run nodes -o json; expect 0 "nodes -o json"
grep -q '"name": "gpu-a100-0"' "$T/out" || fail "nodes -o json: $(head -c 300 "$T/out")"
run node gpu-a100-0; expect 0 "node gpu-a100-0"
grep -q 'A100-SXM4-80GB' "$T/out" || fail "node: no devices listed: $(cat "$T/out")"
run node no-such-node; expect 1 "node no-such-node"
grep -q '^xpool node: ' "$T/err" || fail "node 404 message: $(cat "$T/err")"
run devices --class gpu; expect 0 "devices --class gpu"
[ "$(tail -n +2 "$T/out" | wc -l)" -eq 28 ] || fail "devices --class gpu: want 28 GPUs, got $(tail -n +2 "$T/out" | wc -l)"
run devices --node gpu-h100-0 -o json; expect 0 "devices --node -o json"
grep -q '"H100-SXM5-80GB"' "$T/out" || fail "devices --node gpu-h100-0: $(head -c 300 "$T/out")"
# the server's overcommit for that model: 1.5 x 80 GiB admitted, shown
grep -q '"memory_admitted_mib": 122880' "$T/out" || fail "devices: no overcommit: $(head -c 600 "$T/out")"
grep -q '"mode": "shared"' "$T/out" || fail "devices: no mode: $(head -c 600 "$T/out")"
run devices --node gpu-h100-0
grep -q ' shared, memory x1.5 ' "$T/out" || fail "devices table: no overcommit: $(head -3 "$T/out")"
run devices --node gpu-a100-0
grep -q 'memory x' "$T/out" && fail "devices: A100 overcommitted: $(head -3 "$T/out")"
run queues; expect 0 "queues"
grep -q '^default ' "$T/out" || fail "queues: no default queue: $(cat "$T/out")"

# --- submit by flags, by -f YAML; jobs, job, -o json ---
run submit --name flagjob --gpus 1 --cpu 2 --memory 4Gi --duration 1h --label team=vision \
	-q -- sleep 3600
expect 0 "submit by flags"
J1=$(cat "$T/out")
case "$J1" in '' | *[!0-9]*) fail "submit -q printed '$J1', not an id"; J1=0 ;; esac
cat >"$T/job.yaml" <<'YAML'
name: yamljob
priority: 5
command: ["python", "train.py"]
resources:
  cpu: 1
  memory: 1Gi
  devices: {count: 1, class: gpu, models: [H100-SXM5-80GB]}
duration: 1h
YAML
run submit -f "$T/job.yaml"; expect 0 "submit -f job.yaml"
grep -q '^job [0-9][0-9]* submitted (yamljob' "$T/out" || fail "submit -f output: $(cat "$T/out")"
J2=$(sed -n 's/^job \([0-9]*\) .*/\1/p' "$T/out")
run submit --name nofit --gpus 8 --model NO-SUCH-MODEL -o json; expect 1 "submit unplaceable (refused)"
grep -q "models\[0\]: no registered node has model 'NO-SUCH-MODEL'; did you mean" "$T/err" ||
	fail "unknown model message: $(cat "$T/err")"
run submit --name nofit --gpus 8 --model NO-SUCH-MODEL --hold-for-nodes -o json; expect 0 "submit unplaceable, held for nodes"
J3=$(sed -n 's/^  "id": \([0-9]*\),*$/\1/p' "$T/out" | head -n 1)
[ -n "$J3" ] || fail "submit -o json has no id: $(cat "$T/out")"
run submit --name bad --gpus 99; expect 2 "submit --gpus 99 (checked locally)"
grep -q '^xpool submit: --gpus' "$T/err" || fail "--gpus 99 message: $(cat "$T/err")"

run jobs; expect 0 "jobs"
head -n 1 "$T/out" | grep -q '^ID  *NAME  *TENANT  *QUEUE  *STATE  *NODE  *AGE' ||
	fail "jobs header: $(head -n 1 "$T/out")"
grep -q "^$J1  *flagjob  *admin  *default  *running  *[a-z]" "$T/out" || fail "jobs: flagjob not running: $(cat "$T/out")"
grep -q "^$J2  *yamljob " "$T/out" || fail "jobs: no yamljob: $(cat "$T/out")"
grep -q "^$J3  *nofit .* pending " "$T/out" || fail "jobs: nofit not pending: $(cat "$T/out")"
run jobs --state pending; expect 0 "jobs --state pending"
grep -q "flagjob" "$T/out" && fail "jobs --state pending lists a running job"
run jobs --limit 1 --all -o json; expect 0 "jobs --limit 1 --all"
[ "$(grep -c '"submitted_at"' "$T/out")" -eq 3 ] || fail "jobs --all did not follow the pages: $(head -c 400 "$T/out")"
run jobs --limit 1; expect 0 "jobs --limit 1"
{ [ "$(grep -c '^[0-9]' "$T/out")" -eq 1 ] && grep -q "^$J3 " "$T/out"; } ||
	fail "jobs --limit 1 does not end at the newest job ($J3): $(cat "$T/out")"
grep -q "older jobs not shown" "$T/err" || fail "jobs --limit 1: no note of older jobs: $(cat "$T/err")"
# Slurm habits: a misspelt flag gets the flag meant, a spec file's error names the file
run submit --gres gpu:1; expect 2 "submit --gres"
grep -q "unknown flag --gres: did you mean --gpus?" "$T/err" || fail "--gres: $(cat "$T/err")"
printf 'name: bad\nresources:\n  cpu: 0\n' >"$T/bad.yaml"
run submit -f "$T/bad.yaml"; expect 1 "submit -f bad.yaml"
grep -q "^xpool submit: $T/bad.yaml: resources.cpu: must be at least 1m" "$T/err" ||
	fail "a spec file's error does not name the file: $(cat "$T/err")"
run submit -t 1:00:00 --dry-run; expect 0 "submit -t 1:00:00"
grep -q '"time_limit": "3600s"' "$T/out" || fail "-t 1:00:00: $(cat "$T/out")"
run job "$J1"; expect 0 "job ID"
grep -q '^Name: *flagjob' "$T/out" || fail "job: $(cat "$T/out")"
grep -q '^Allocations:' "$T/out" || fail "job: no allocations: $(cat "$T/out")"
run job "$J1" -o json; expect 0 "job -o json"
grep -q "\"id\": $J1," "$T/out" || fail "job -o json: $(head -c 300 "$T/out")"
run job 999999; expect 1 "job 999999"
grep -q '^xpool job: ..*' "$T/err" || fail "job 404: $(cat "$T/err")"
run job abc; expect 2 "job abc"

# --- explain, cancel, logs ---
run explain "$J3"; expect 0 "explain"
grep -q 'nodes: no matching device' "$T/out" || fail "explain: $(cat "$T/out")"
run explain "$J3" -o json; expect 0 "explain -o json"
grep -q '"reasons"' "$T/out" || fail "explain -o json: $(cat "$T/out")"
# squeue's REASON column and scontrol's hold / release / update
run jobs --state pending; expect 0 "jobs: the reason column"
grep -q "^$J3  *nofit .* NoMatchingDevice$" "$T/out" || fail "jobs: nofit's reason: $(cat "$T/out")"
run hold "$J3"; expect 0 "hold"
grep -q "^job $J3 held" "$T/out" || fail "hold: $(cat "$T/out")"
run jobs --state pending; expect 0 "jobs after hold"
grep -q "^$J3 .* Held(admin)$" "$T/out" || fail "jobs: a held job: $(cat "$T/out")"
run explain "$J3"; expect 0 "explain a held job"
grep -q "^job $J3 is pending (Held): it is held by an admin" "$T/out" || fail "explain held: $(cat "$T/out")"
run update "$J3" --priority 7 --name nofit2 -t 2:00:00; expect 0 "update"
run job "$J3" -o json; expect 0 "job after update"
grep -q '"priority": 7' "$T/out" && grep -q '"name": "nofit2"' "$T/out" && grep -q '"time_limit": "7200000ms"' "$T/out" ||
	fail "update did not change the job: $(head -c 600 "$T/out")"
run update "$J3" --priority 5000; expect 2 "update --priority 5000 (checked locally)"
run update "$J3" --queue no-such-queue; expect 1 "update into a missing queue"
grep -q "queue: no queue no-such-queue" "$T/err" || fail "update --queue: $(cat "$T/err")"
run update "$J1" --priority 1; expect 1 "update a running job"
grep -q "is running: only a pending job changes" "$T/err" || fail "update running: $(cat "$T/err")"
run update "$J3"; expect 2 "update with nothing to change"
run release "$J3"; expect 0 "release"
run release "$J3"; expect 1 "release a job not held"
run jobs --state pending; expect 0 "jobs after release"
grep -q "^$J3 .* NoMatchingDevice$" "$T/out" || fail "jobs after release: $(cat "$T/out")"
run cancel "$J3"; expect 0 "cancel"
grep -q "^job $J3 cancelled" "$T/out" || fail "cancel: $(cat "$T/out")"
run cancel "$J3"; expect 1 "cancel a cancelled job (409)"
grep -q '^xpool cancel: ' "$T/err" || fail "cancel twice: $(cat "$T/err")"
run cancel 999999; expect 1 "cancel 999999"
run submit --name quick --cpu 1 --duration 1s --exit-code 3 -q -- echo hi; expect 0 "submit quick"
J4=$(cat "$T/out")
i=0
until "$XP" job "$J4" -o json 2>/dev/null | grep -q '"state": "failed"'; do
	i=$((i + 1))
	[ "$i" -le 100 ] || { fail "job $J4 (1 s, exit 3) did not fail in 10 s"; break; }
	sleep 0.1
done
run job "$J4"; expect 0 "job quick"
grep -q '^Exit code: *3' "$T/out" || fail "exit code: $(cat "$T/out")"
run logs "$J4"; expect 0 "logs"
[ -s "$T/out" ] || fail "logs: empty"

# --- the scheduling flags reach the controller: limit, QoS, deadline, after ---
run submit -q --name limited --cpu 1 --duration 1h --time-limit 30m --qos protected \
	--deadline 6h --after "$J4":after-not-ok; expect 0 "submit with --time-limit --after"
J5=$(cat "$T/out")
run job "$J5" -o json; expect 0 "job limited"
for want in '"time_limit": "1800000ms"' '"qos": "protected"' '"type": "after-not-ok"' \
	'"deadline_status"'; do
	grep -q "$want" "$T/out" || fail "job limited lacks $want: $(head -c 600 "$T/out")"
done
run cancel "$J5"; expect 0 "cancel limited"

# --- metering: prices, counters, cost ---
run prices; expect 1 "prices before any table"
printf 'currency: EUR\ncpu: 0.04\ndevices: {default: 2}\n' >"$T/prices.yaml"
run prices set "$T/prices.yaml"; expect 0 "prices set"
run prices; expect 0 "prices"
grep -q '^currency: EUR' "$T/out" || fail "prices: $(cat "$T/out")"
printf 'cpu: lots\n' >"$T/bad-prices.yaml"
run prices set "$T/bad-prices.yaml"; expect 1 "a bad price table"
grep -q 'cpu: expected a price' "$T/err" || fail "bad prices message: $(cat "$T/err")"
run count "$J1" inference_requests=40 training_runs=2; expect 0 "count"
run count "$J1" Bad=1; expect 1 "a bad counter name"
run count "$J1" inference_requests; expect 2 "count without =N"
run cost --by job; expect 0 "cost --by job"
grep -q 'inference_requests=40' "$T/out" || fail "cost table: $(cat "$T/out")"
grep -q '^total ' "$T/out" || fail "cost has no total: $(cat "$T/out")"
run cost --csv --by tenant; expect 0 "cost --csv"
head -1 "$T/out" | grep -q '^tenant,cpu_core_hours,memory_gib_hours,.*,cost_EUR$' ||
	fail "cost csv header: $(head -1 "$T/out")"
grep -q '^total,' "$T/out" || fail "cost csv total: $(cat "$T/out")"
run cost --by team; expect 2 "cost --by team"
run top --once; expect 0 "top --once"
grep -q '^NODE .*DEVICES' "$T/out" || fail "top: no header: $(head -3 "$T/out")"
grep -q '^[0-9][0-9]* nodes, [0-9][0-9]* devices: .* % in use' "$T/out" || fail "top: no totals: $(tail -2 "$T/out")"
grep -q '[#+-]' "$T/out" || fail "top: no device held: $(cat "$T/out")"
run top --once --class tpu; expect 2 "top --class tpu"
run top --once --interval 1ms; expect 2 "top --interval 1ms"
run forecast --days 3 --hours 4; expect 0 "forecast"
grep -q '^cost of the pool: no forecast: not enough history: .* the model needs 72 h' "$T/out" ||
	fail "forecast on a new controller: $(head -3 "$T/out")"
run forecast --days 1; expect 1 "forecast --days 1 (400)"
run advise; expect 0 "advise"
grep -q '^total: .* a month' "$T/out" || fail "advise: $(tail -2 "$T/out")"
grep -q '^not judged: idle_quota: .* 24 h' "$T/out" || fail "advise on a new controller: $(tail -2 "$T/out")"
run alerts; expect 0 "alerts"
grep -q 'signals,.*notifications' "$T/out" || fail "alerts: $(cat "$T/out")"

# --- a workflow: one document, a DAG ---
cat >"$T/wf.yaml" <<'YAML'
name: nightly
jobs:
  - name: fetch
    command: "true"
    resources: {cpu: 1}
    duration: 0s
  - name: train
    depends_on: [{job: fetch}]
    resources: {cpu: 1}
    duration: 0s
  - name: report
    depends_on: [{job: train, type: after-any}]
    resources: {cpu: 1}
YAML
run submit -f "$T/wf.yaml"; expect 0 "submit -f workflow.yaml"
grep -q '^workflow nightly submitted: 3 jobs' "$T/out" || fail "workflow submit: $(cat "$T/out")"
i=0
until "$XP" jobs --workflow nightly 2>/dev/null | grep -q '^[0-9]*  *report  *running'; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the workflow's last step never ran: $("$XP" jobs --workflow nightly 2>&1)"; sleep 0.1
done
run jobs --workflow nightly; expect 0 "jobs --workflow"
head -n 1 "$T/out" | grep -q '^ID  *NAME  *STATE  *AFTER' || fail "jobs --workflow header: $(cat "$T/out")"
grep -q 'train  *succeeded  *ok:[0-9]' "$T/out" || fail "jobs --workflow: train: $(cat "$T/out")"
grep -q 'report  *running  *any:[0-9]' "$T/out" || fail "jobs --workflow: report: $(cat "$T/out")"
printf 'name: bad\njobs: [{name: a, depends_on: [{job: a}]}]\n' >"$T/bad-wf.yaml"
run submit -f "$T/bad-wf.yaml"; expect 1 "a workflow with a cycle"
grep -q 'cycle' "$T/err" || fail "workflow cycle message: $(cat "$T/err")"

# --- admin: queues, cordon ---
run queue create batch --priority 5 --weight 2; expect 0 "queue create"
run queue create batch; expect 1 "queue create twice (409)"
run queues; grep -q '^batch  *-  *5  *2  *reclaim ' "$T/out" || fail "queues: batch: $(cat "$T/out")"
run queue delete batch; expect 0 "queue delete"
run queue create gold --guarantee gpu=2 --max gpu=4 --max memory=64Gi --preempt never
expect 0 "queue create with quotas"
run queues; grep -q '^gold .*never .*gpu 0/2/4, memory 0/0/64Gi' "$T/out" || fail "queues: gold: $(cat "$T/out")"
run queue set gold --max gpu=1; expect 1 "queue set: guarantee above max"
grep -q 'quota.gpu' "$T/err" || fail "queue set: the field: $(cat "$T/err")"
run queue set gold --max gpu --weight 2; expect 2 "queue set: RES without =QTY"
run queue set gold --parent default; expect 2 "queue set: --parent"
run queue set gold --aging soon; expect 1 "queue set: a bad aging"
grep -q 'aging' "$T/err" || fail "queue set --aging: the field: $(cat "$T/err")"
run queue set gold --weight 3 --max gpu=none --aging 30m; expect 0 "queue set"
run queues -o json; grep -q '"weight": 3' "$T/out" || fail "queue set: weight: $(cat "$T/out")"
run queues; grep -q '^gold .*gpu 0/2/-' "$T/out" || fail "queue set: max lifted: $(cat "$T/out")"
run queue set gold --max gpu=1 --guarantee gpu=1; expect 0 "queue set: both"
run submit -q --queue gold --gpus 1 --duration 1h -- sleep 1; expect 0 "submit to gold"
G1=$(cat "$T/out")
run submit -q --queue gold --gpus 1 --duration 1h -- sleep 1; expect 0 "submit past gold's max"
G2=$(cat "$T/out")
i=0
until "$XP" job "$G1" -o json 2>/dev/null | grep -q '"state": "running"'; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "gold's first job never ran"; sleep 0.1
done
run explain "$G2"; expect 0 "explain a job past its queue's max"
grep -q 'queue gold is at its max of gpu: it uses 1 of 1, the job needs 1' "$T/out" || fail "explain quota: $(cat "$T/out")"
run cancel "$G1" "$G2"; expect 0 "cancel gold's jobs"
run cordon gpu-a100-1; expect 0 "cordon"
run node gpu-a100-1 -o json; grep -q '"state": "cordoned"' "$T/out" || fail "cordon: $(head -c 300 "$T/out")"
run uncordon gpu-a100-1; expect 0 "uncordon"
run nodes; grep -q '^gpu-a100-1  *ready' "$T/out" || fail "uncordon: $(cat "$T/out")"

# --- tenants and tokens: a second tenant cannot see the first's job ---
run tenant create team-b; expect 0 "tenant create"
run tenants; grep -q '^team-b ' "$T/out" || fail "tenants: $(cat "$T/out")"
run token create --tenant team-b --name ci; expect 0 "token create"
TB=$(tail -n 1 "$T/out")
run tokens; grep -q ' team-b  *ci  *tenant  *-' "$T/out" || fail "tokens: $(cat "$T/out")"
TBID=$(sed -n 's/^\([0-9]*\)  *team-b  *ci .*/\1/p' "$T/out")
run_as "$TB" job "$J1"; expect 1 "team-b reads admin's job (404)"
grep -q '^xpool job: ..*' "$T/err" || fail "team-b 404 message: $(cat "$T/err")"
run_as "$TB" jobs; expect 0 "team-b jobs"
grep -q 'flagjob' "$T/out" && fail "team-b sees admin's jobs: $(cat "$T/out")"
run_as "$TB" cancel "$J1"; expect 1 "team-b cancels admin's job"
# a wrong method: 405 with the methods the path takes
curl -s -D "$T/hdr" -o /dev/null -X PUT -H "Authorization: Bearer $ADMIN" "$XPOOL_ADDR/v1/jobs"
grep -q '^HTTP/1.1 405' "$T/hdr" && grep -qi '^Allow: GET, POST' "$T/hdr" || fail "PUT /v1/jobs: $(cat "$T/hdr")"
# another tenant's job answers exactly as a job that does not exist
run_as "$TB" job "$J1"; expect 1 "team-b reads admin's job"
sed "s/job $J1 /job N /" "$T/err" >"$T/foreign"
run_as "$TB" job 999999; expect 1 "team-b reads a missing job"
sed "s/job 999999 /job N /" "$T/err" >"$T/absent"
cmp -s "$T/foreign" "$T/absent" || fail "a foreign job and a missing one answer differently: $(cat "$T/foreign") / $(cat "$T/absent")"
run_as "$TB" tenants; expect 1 "team-b lists tenants (403)"
run_as "$TB" submit --name bjob --cpu 1 --duration 1h -q; expect 0 "team-b submits"
run jobs --tenant team-b; grep -q 'bjob' "$T/out" || fail "admin jobs --tenant team-b: $(cat "$T/out")"
run token revoke "$TBID"; expect 0 "token revoke"
run_as "$TB" jobs; expect 1 "a revoked token (401)"
grep -q '^xpool jobs: ' "$T/err" || fail "401 message: $(cat "$T/err")"
run jobs --token wrong; expect 1 "an unknown token (401)"

# --- events ---
run events --since 0; expect 0 "events --since 0"
grep -q 'job.submitted' "$T/out" || fail "events: no job.submitted: $(head -n 5 "$T/out")"
grep -q 'tenant.created' "$T/out" || fail "events: no tenant.created"
run events --since 0 --limit 1 -o json; expect 0 "events -o json"
grep -q '"events"' "$T/out" || fail "events -o json: $(head -c 300 "$T/out")"
NEXT=$(sed -n 's/^  "next": \([0-9]*\).*/\1/p' "$T/out")
[ -n "$NEXT" ] || fail "events -o json: no next"
run events --since "${NEXT:-0}" --limit 1 -o json
grep -q "\"seq\": ${NEXT:-0}," "$T/out" && fail "events --since $NEXT repeats event $NEXT"
# more than two pages (1000 events each): the catch-up reads them all
i=0
while [ "$i" -lt 2100 ]; do
	"$XP" submit -q --cpu 100m --duration 0s >/dev/null 2>&1 || { fail "submit $i"; break; }
	i=$((i + 1))
done
run events -o json; expect 0 "events over three pages"
N=$(grep -c '"seq":' "$T/out")
LASTSEQ=$(sed -n 's/^  "next": \([0-9]*\).*/\1/p' "$T/out")
[ "$N" -ge 4200 ] && [ "$N" = "$LASTSEQ" ] ||
	fail "events read $N of $LASTSEQ events: the catch-up stopped after a page"
if command -v timeout >/dev/null 2>&1; then
	timeout 5 "$XP" events --follow --since 0 >"$T/follow" 2>&1
	grep -q 'job.submitted' "$T/follow" || fail "events --follow: $(head -n 5 "$T/follow")"
fi

# --- scancel's selectors: by name, state, queue ---
for i in 1 2 3; do run submit -q --name bulk --gpus 64 --hold-for-nodes; expect 0 "submit bulk $i"; done
run submit -q --name keep --gpus 64 --hold-for-nodes; expect 0 "submit keep"
KEEP=$(cat "$T/out")
run cancel --name bulk; expect 0 "cancel --name bulk"
[ "$(grep -c ' cancelled$' "$T/out")" -eq 3 ] || fail "cancel --name bulk: $(cat "$T/out")"
run jobs --state pending --name bulk; expect 0 "jobs after the bulk cancel"
grep -q bulk "$T/out" && fail "cancel --name left a bulk job: $(cat "$T/out")"
run job "$KEEP" -o json; expect 0 "the other job"
grep -q '"state": "pending"' "$T/out" || fail "cancel --name bulk touched job $KEEP: $(head -c 300 "$T/out")"
run cancel --name bulk; expect 0 "cancel --name with nothing left"
grep -q "no pending or running job matches" "$T/out" || fail "empty selection: $(cat "$T/out")"
run cancel; expect 2 "cancel with neither IDs nor selectors"
run cancel "$KEEP" --name keep; expect 2 "cancel with IDs and selectors"
run cancel --state succeeded; expect 2 "cancel --state succeeded"
run cancel --state pending --queue default; expect 0 "cancel --state pending --queue default"
grep -q "^job $KEEP cancelled" "$T/out" || fail "cancel --state pending: $(cat "$T/out")"

# --- the config file; errors ---
mkdir -p "$HOME/.config/xpool"
printf 'addr: %s\ntoken_file: %s/data/admin.token\n' "$XPOOL_ADDR" "$T" >"$HOME/.config/xpool/config"
(unset XPOOL_ADDR XPOOL_TOKEN; "$XP" queues >"$T/out" 2>"$T/err") ||
	fail "config file with token_file: $(cat "$T/err")"
printf 'adress: x\n' >"$HOME/.config/xpool/config"
(unset XPOOL_ADDR XPOOL_TOKEN; "$XP" queues >"$T/out" 2>"$T/err") && fail "a bad config key was accepted"
grep -q 'config:1: unknown key' "$T/err" || fail "bad config message: $(cat "$T/err")"
rm -f "$HOME/.config/xpool/config"
run jobs --addr 127.0.0.1:1; expect 1 "a closed port"
grep -q 'cannot reach the controller at http://127.0.0.1:1' "$T/err" || fail "closed port: $(cat "$T/err")"

# --- the server stops on SIGTERM ---
kill "$PID"
i=0
while kill -0 "$PID" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -le 100 ] || { fail "xpool dev ignores SIGTERM"; break; }
	sleep 0.1
done
stop_server

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_client: all checks passed"
