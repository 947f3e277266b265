#!/bin/sh
# The per-workload table of docs/results/mcts.md from one run's runs.csv:
#   build/xpool sim openb --pods all --policy fgd,xpool,mcts --window 64 \
#       --seeds 42-51 --bound --out out/mcts-w64
#   bench/mcts_report.sh out/mcts-w64
# Means over seeds of unallocated GPU % at 100 % arrived per policy, the
# LP bound (docs/design/bound.md), mcts against FGD, the share of xpool's
# gap to the bound that mcts closes, and decisions per CPU second (pods /
# replay CPU time; the machine's load is in the text, not here).
set -eu
DIR=${1:-out/mcts-w64}
awk -F, '
NR == 1 { next }
{
	w = $1; p = $2
	if (!(w in seen)) { seen[w] = 1; order[++nw] = w }
	u[w, p] += $8; n[w, p]++
	pods[w, p] += $5; cpu[w, p] += $7
	if ($13 >= 0) { b[w] += $13; nb[w]++ }
}
END {
	print "| workload | FGD | xpool | mcts | bound | mcts vs FGD | mcts vs xpool | xpool gap to bound closed | dec/s xpool | dec/s mcts | mcts / xpool speed |"
	print "|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= nw; i++) {
		w = order[i]
		f = u[w, "06-FGD"] / n[w, "06-FGD"]; x = u[w, "07-xpool"] / n[w, "07-xpool"]
		m = u[w, "08-mcts"] / n[w, "08-mcts"]; bd = nb[w] ? b[w] / nb[w] : -1
		gap = (bd >= 0 && x > bd) ? sprintf("%+.0f %%", 100 * (x - m) / (x - bd)) : "-"
		dx = 1000 * pods[w, "07-xpool"] / cpu[w, "07-xpool"]; dm = 1000 * pods[w, "08-mcts"] / cpu[w, "08-mcts"]
		printf "| %s | %.2f | %.2f | %.2f | %.2f | %+.1f %% | %+.1f %% | %s | %.0f | %.0f | %.3f |\n", w, f, x, m, bd,
			100 * (m - f) / f, 100 * (m - x) / x, gap, dx, dm, dm / dx
		sf += f; sx += x; sm += m; sb += bd; rel += (m - f) / f
		if (m < f) better++
		if (bd >= 0 && x > bd) { gsum += (x - m) / (x - bd); ng++ }
	}
	printf "| **mean of %d** | %.3f | %.3f | %.3f | %.3f | %+.1f %% (of means) | %+.1f %% (of means) | %+.0f %% (mean) | | | |\n",
		nw, sf / nw, sx / nw, sm / nw, sb / nw, 100 * (sm - sf) / sf, 100 * (sm - sx) / sx, ng ? 100 * gsum / ng : 0
	printf "\nmcts lower than FGD on %d of %d workloads; mean per-workload change against FGD %+.1f %%\n",
		better, nw, 100 * rel / nw
}' "$DIR/runs.csv"
