#!/bin/sh
# cli_prometheus: /metrics scraped by a real Prometheus server (Debian's
# `prometheus`, installed by scripts/deps.sh) on loopback. The text passes
# `promtool check metrics`; after a few jobs run, the query API answers the
# series issue 7 §1 lists: per device (allocation, health), per node, per
# queue (usage against guarantee and max, pending by reason), per tenant,
# the scheduler's histograms and counters, the fragmentation measure and
# the store's commit latency; a token is needed, and only an admin's sees
# the queue and tenant series. Skips (exit 77, ctest's SKIP_RETURN_CODE) when prometheus is absent.
# usage: cli_prometheus.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
	echo "SKIP: prometheus or promtool not installed (scripts/deps.sh installs them)"
	exit 77
fi
. "$SRC/tests/devlib.sh"
PROM=
trap 'stop_server; [ -n "$PROM" ] && kill "$PROM" 2>/dev/null && wait "$PROM" 2>/dev/null; rm -rf "$T"' EXIT
start_dev --no-agent --cluster "$SRC/examples/clusters/small.yaml"

# a little of everything: jobs running, one pending, a queue with a quota
run queue create team-a --guarantee gpu=2 --max gpu=2; expect 0 "queue create"
run submit -q --queue team-a --gpus 2 --cpu 2 --duration 1h; expect 0 "submit"
run submit -q --queue team-a --gpus 1 --cpu 1 --duration 1h; expect 0 "submit over the max"
run submit -q --fraction 0.5 --device-class gpu --duration 1h; expect 0 "submit a fraction"
i=0
until "$XP" jobs --state running 2>/dev/null | grep -c ' running ' | grep -q '^2$'; do
	i=$((i + 1))
	[ "$i" -le 300 ] || { fail "two jobs did not start in 30 s"; break; }
	sleep 0.1
done

# /metrics needs a token; a tenant's has no queue or tenant series; an
# admin's has them
code=$(curl -s -o /dev/null -w '%{http_code}' "$XPOOL_ADDR/metrics")
[ "$code" = 401 ] || fail "/metrics without a token: $code, want 401"
run tenant create team-x; expect 0 "tenant create"
run token create --tenant team-x --name scrape -o json; expect 0 "token create"
TX=$(sed -n 's/^  "token": "\(.*\)",*$/\1/p' "$T/out")
curl -s -H "Authorization: Bearer $TX" "$XPOOL_ADDR/metrics" >"$T/tenant.txt" || fail "GET /metrics as team-x"
grep -q '^xpool_jobs{' "$T/tenant.txt" || fail "a tenant's /metrics has no job series: $(head -c 300 "$T/tenant.txt")"
grep -q 'queue=\|tenant=' "$T/tenant.txt" && fail "a tenant's /metrics names queues or tenants"
curl -s -H "Authorization: Bearer $XPOOL_TOKEN" "$XPOOL_ADDR/metrics" >"$T/metrics.txt" || fail "GET /metrics"
grep -q 'xpool_queue_resource{queue="team-a"' "$T/metrics.txt" || fail "an admin's /metrics has no queue series"
promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(cat "$T/promtool.out")"

# a real Prometheus scraping every 1 s
HOSTPORT=${XPOOL_ADDR#http://}
cat >"$T/prometheus.yml" <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: xpool
    authorization: {type: Bearer, credentials: '$XPOOL_TOKEN'}
    static_configs: [{targets: ['$HOSTPORT']}]
YML
promtool check config "$T/prometheus.yml" >"$T/promtool.out" 2>&1 ||
	fail "promtool check config: $(cat "$T/promtool.out")"
# a port below the ephemeral range; another one if it is taken
PPORT=
for try in 1 2 3 4 5; do
	port=$((20000 + ($$ * 7 + try * 997) % 10000))
	prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb$try" \
		--web.listen-address="127.0.0.1:$port" >"$T/prom.log" 2>&1 &
	PROM=$!
	i=0
	while kill -0 "$PROM" 2>/dev/null && ! grep -q 'Server is ready to receive web requests' "$T/prom.log"; do
		i=$((i + 1))
		[ "$i" -le 600 ] || break
		sleep 0.1
	done
	if grep -q 'Server is ready to receive web requests' "$T/prom.log"; then
		PPORT=$port
		break
	fi
	kill "$PROM" 2>/dev/null
	wait "$PROM" 2>/dev/null
	PROM=
done
[ -n "$PPORT" ] || { fail "prometheus did not start: $(tail -3 "$T/prom.log")"; exit 1; }
q() { curl -s --get --data-urlencode "query=$1" "http://127.0.0.1:$PPORT/api/v1/query"; }
i=0
until q 'up{job="xpool"}' 2>/dev/null | grep -q '"value":\[[0-9.]*,"1"\]'; do
	i=$((i + 1))
	if [ "$i" -gt 600 ]; then
		fail "prometheus did not scrape xpool in 60 s: $(grep -i 'err' "$T/prom.log" | tail -3)"
		break
	fi
	sleep 0.1
done
# each query must return at least one sample; some must match a value
# (the text is rendered at most every 2 s: a value may take a scrape or two)
check() { # check QUERY [REGEX]
	i=0
	while :; do
		out=$(q "$1")
		if echo "$out" | grep -q '"status":"success"' && echo "$out" | grep -q '"result":\[{' &&
			{ [ -z "${2:-}" ] || echo "$out" | grep -q -- "$2"; }; then
			return
		fi
		i=$((i + 1))
		[ "$i" -le 100 ] || { fail "query $1: want ${2:-a series} in $out"; return; }
		sleep 0.1
	done
}
check 'xpool_jobs{state="running"}' '"value":\[[0-9.]*,"2"\]'
check 'xpool_jobs{state="pending"}' '"value":\[[0-9.]*,"1"\]'
check 'sum(xpool_device_allocated_ratio)' '"value":\[[0-9.]*,"2.5"\]'
check 'xpool_device_healthy == 1'
check 'xpool_device_memory_total_bytes{class="gpu"}'
check 'xpool_node_cpu_cores{kind="allocated"} > 0'
check 'xpool_node_memory_bytes{kind="allocatable"}'
check 'xpool_node_up'
check 'xpool_queue_resource{queue="team-a",resource="gpu",kind="used"}' '"value":\[[0-9.]*,"2"\]'
check 'xpool_queue_resource{queue="team-a",resource="gpu",kind="max"}' '"value":\[[0-9.]*,"2"\]'
check 'xpool_queue_jobs{queue="team-a",state="pending_resources"}' '"value":\[[0-9.]*,"1"\]'
check 'xpool_tenant_resource_used{tenant="admin",resource="gpu"}' '"value":\[[0-9.]*,"2.5"\]'
check 'xpool_schedule_latency_seconds_count' '"value":\[[0-9.]*,"2"\]'
check 'histogram_quantile(0.99, xpool_scheduling_cycle_seconds_bucket)'
check 'xpool_placements_total{policy="bestfit"}'
check 'xpool_preemptions_total'
check 'xpool_gpu_fragmentation_ratio'
check 'xpool_store_commit_seconds_count > 0'
check 'xpool_alert_signals_total'

# every query of the Grafana dashboard parses and runs ($class: every class)
if command -v jq >/dev/null 2>&1; then
	jq -r '.panels[].targets[].expr' "$SRC/deploy/grafana/xpool.json" | sed 's/\$class/.*/g' >"$T/exprs"
	n=0
	while IFS= read -r e; do
		n=$((n + 1))
		out=$(q "$e")
		echo "$out" | grep -q '"status":"success"' || fail "dashboard query $e: $out"
	done <"$T/exprs"
	[ "$n" -ge 10 ] || fail "the dashboard has only $n queries"
fi

[ "$fails" -eq 0 ] || exit 1
echo "ok: promtool accepts /metrics; prometheus scraped and answered every query"
