#!/usr/bin/env python3
"""make bench, section 7: GC, GC-SC and GC-DC through the engine on the same Markov straggler
realisation, against the timing model (notes seed-002-gcdc.md, test 18): the per-iteration time of
each run versus the model's order statistic of the compute times the workers were given
(GC: the (K - s)-th smallest; clustered: the max over the iteration's clusters of the
(l - r + 1)-th smallest), and beside the simulator's trial 0 (same seed).

  gcdc.py ENGINE_RUN_DIR SIM_RUN_DIR [ENGINE_RUN_DIR SIM_RUN_DIR ...]
Prints a Markdown section."""
import csv
import json
import os
import sys


def records(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def analyse(run):
    cfg = json.load(open(os.path.join(run, "summary.json")))
    plan = json.load(open(os.path.join(run, "plan.json")))
    k = plan["workers"]
    master = {e["t"]: e for e in records(os.path.join(run, "rank-0.jsonl")) if e.get("ev") == "iter"}
    target = {}
    for w in range(1, k + 1):
        for e in records(os.path.join(run, f"rank-{w}.jsonl")):
            if e.get("ev") == "iter" and "target" in e:
                target[(w, e["t"])] = e["target"]
    cluster_code = next((c for c in plan["codes"] if c.get("family") == "clusters"), None)
    rows = []
    with open(os.path.join(run, "iterations.csv")) as f:
        for row in csv.DictReader(f):
            t = int(row["iteration"])
            x = {w: target[(w, t)] for w in range(1, k + 1) if (w, t) in target}
            if len(x) < k:
                continue
            if cluster_code:
                ell = len(master[t]["clusters"][0])
                need = ell - cluster_code["r"] + 1
                pred = max(sorted(x[w] for w in c)[need - 1] for c in master[t]["clusters"])
            else:
                pred = sorted(x.values())[k - plan["s"] - 1]
            rows.append((float(row["wall_s"]), pred))
    return cfg, rows


def main(args):
    print("## 7. Gradient coding with clusters under Markov stragglers: engine vs the timing model\n")
    print("The same Markov straggler realisation (seed) for every scheme (`configs/bench/gcdc.toml`: K = 20,")
    print("P = 5, r = 3, n = 3, the paper's Fig. 4 parameters with 1 paper time unit = 10 ms; 50 iterations).")
    print("*Model*: per iteration, the order statistic of the compute times the workers were given")
    print("(GC: the (K − s)-th; GC-SC / GC-DC: the slowest cluster's (ℓ − r + 1)-th, with the iteration's")
    print("partition from the master's log). *Within*: iterations whose measured time is within 1 ms + 5 % of")
    print("the model (note test 18). *Simulated*: `outrun simulate`, trial 0 (the same seed).\n")
    print("| scheme | measured mean ms | model mean ms | within 1 ms + 5 % | median excess ms | simulated mean ms |")
    print("|---|---|---|---|---|---|")
    for run, sim in zip(args[0::2], args[1::2]):
        summary, rows = analyse(run)
        simsum = json.load(open(os.path.join(sim, "summary.json")))
        n = len(rows)
        within = sum(1 for m, p in rows if abs(m - p) <= 1e-3 + 0.05 * p)
        excess = sorted(m - p for m, p in rows)
        print("| %s | %.2f | %.2f | %d/%d | %.2f | %.2f |" % (
            summary.get("scheme", os.path.basename(run)), 1e3 * sum(m for m, _ in rows) / n, 1e3 * sum(p for _, p in rows) / n,
            within, n, 1e3 * excess[n // 2], 1e3 * simsum["mean_s"]))
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
