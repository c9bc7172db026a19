#!/usr/bin/env python3
"""Report of scripts/bench/pagerank.sh: per-phase iteration times (each phase's maximum over the
servers, mean over iterations after the first and over repetitions), bytes per iteration, the
best r and its speedup over r = 1, and two predictions of the best r from the r = 1 runs: the
thesis's r* = sqrt(T_Shuffle / T_Map) (Remark 14) and T(r) = r·T_Map(1) + T_Shuffle(1)·wire(r)/wire(1)
+ T_other(1), the shuffle scaled by the bytes the servers actually send.

usage: pagerank.py OUT_DIR BANDWIDTH [TITLE]   (PAGERANK_JSON=FILE also writes the figures as JSON)"""
import csv, glob, json, math, os, sys, tomllib
from collections import defaultdict

out, bw = sys.argv[1], sys.argv[2]
title = sys.argv[3] if len(sys.argv) > 3 else "## 9. Coded PageRank on the emulated cluster"
PH = ["map_s", "encode_s", "shuffle_s", "decode_s", "reduce_s", "redistribute_s"]
runs = defaultdict(list)  # (kind, r) -> list of dicts of means
for d in sorted(glob.glob(os.path.join(out, "runs", "*"))):
    # scheme and r from the run's own summary and config (run names are the sweep's)
    s = json.load(open(os.path.join(d, "summary.json")))
    kind = s["scheme"].split("-")[0]
    r = tomllib.load(open(os.path.join(d, "config.toml"), "rb"))["scheme"]["r"]
    rows = list(csv.DictReader(open(os.path.join(d, "phases.csv"))))[1:]
    it = list(csv.DictReader(open(os.path.join(d, "iterations.csv"))))[1:]
    m = {p: sum(float(x[p]) for x in rows) / len(rows) for p in PH}
    m["wall_s"] = sum(float(x["wall_s"]) for x in it) / len(it)
    m["l_bytes"] = float(rows[0]["l_bytes"]); m["wire_bytes"] = float(rows[0]["wire_bytes"])
    m["iters_ms"] = [float(x["wall_s"]) * 1e3 for x in it]
    runs[(kind, r)].append(m)
loads = {j["r"]: j for j in map(json.loads, open(os.path.join(out, "loads.jsonl")))}
mean = lambda xs: sum(xs) / len(xs)
agg = {k: {f: mean([m[f] for m in v]) for f in v[0] if f != "iters_ms"} for k, v in runs.items()}
rs = sorted({r for _, r in agg})
# a sweep may run the coded Shuffle alone (scenario 3: its setup takes minutes a run)
kinds = [kind for kind in ("coded", "uncoded") if all((kind, r) in agg for r in rs)]
cfg = open(glob.glob(os.path.join(out, "runs", "*", "config.toml"))[0]).read()
print(f"{title}\n")
reps = len(next(iter(runs.values())))
n = loads[1]["n"]; K = loads[1]["servers"]
# the links' tc tbf burst (what a link that waited sends at once), where the run recorded it
burst_file = os.path.join(out, "burst")
burst = open(burst_file).read().strip() if os.path.exists(burst_file) else ""
burst = f" (tc tbf, a burst of {burst} B)" if burst else ""
print(f"K = {K} servers, one per emulated host, links {bw} both ways{burst}; ER graph n = {n}, "
      f"{loads[1]['values']} values per iteration; {reps} repetition{'s' if reps > 1 else ''}, "
      "per-phase times are each phase's maximum over servers (mean over iterations 2..T).\n")
print("| shuffle | r | iteration ms | map | encode | shuffle | decode | reduce | redistribute | L-bytes/it | wire bytes/it | vs r = 1 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
base = agg[("coded", 1)]["wall_s"]
for kind in kinds:
    for r in rs:
        a = agg[(kind, r)]
        print(f"| {kind} | {r} | {a['wall_s']*1e3:.1f} | " + " | ".join(f"{a[p]*1e3:.1f}" for p in PH)
              + f" | {a['l_bytes']:.0f} | {a['wire_bytes']:.0f} | {100*(1-a['wall_s']/base):+.0f}% |")
best = {kind: min(rs, key=lambda r: agg[(kind, r)]["wall_s"]) for kind in kinds}
one = agg[("coded", 1)]
t_map = one["map_s"] + one["encode_s"]
t_sh = one["shuffle_s"] + one["decode_s"]
t_other = one["reduce_s"] + one["redistribute_s"]
rstar = math.sqrt(t_sh / t_map) if t_map > 0 else float("inf")
model = {r: r * t_map + t_sh * agg[("coded", r)]["wire_bytes"] / one["wire_bytes"] + t_other for r in rs}
print()
for kind in kinds:
    b = best[kind]
    print(f"- best r, {kind} shuffle: **r = {b}**, {agg[(kind, b)]['wall_s']*1e3:.1f} ms per iteration, "
          f"{100*(1-agg[(kind, b)]['wall_s']/base):.0f}% faster than r = 1 (thesis, EC2, coded: 43.4% / 50.8% / 41.8% at r = 5 / 4 / 4).")
print(f"- load model from the r = 1 runs: thesis r* = sqrt(T_Shuffle/T_Map) = sqrt({t_sh*1e3:.1f}/{t_map*1e3:.2f}) = {rstar:.1f} "
      f"(capped at K − 1 = {K-1}); bytes-scaled T(r) predicts r = {min(model, key=model.get)} "
      f"(" + ", ".join(f"{model[r]*1e3:.0f}" for r in rs) + " ms for r = " + ", ".join(map(str, rs)) + ").")
if "uncoded" in kinds:
    print(f"- coded / uncoded iteration time at the same r: " + ", ".join(f"r = {r}: {agg[('coded', r)]['wall_s']/agg[('uncoded', r)]['wall_s']:.2f}" for r in rs)
          + "; L-bytes (a multicast counted once, the thesis's bus) coded / uncoded: "
          + ", ".join(f"{agg[('coded', r)]['l_bytes']/max(1, agg[('uncoded', r)]['l_bytes']):.2f}" for r in rs) + ".")
else:
    print("- the uncoded Shuffle was not run.")
if os.environ.get("PAGERANK_JSON"):
    with open(os.environ["PAGERANK_JSON"], "w") as f:
        json.dump({
            "servers": K, "n": n, "rs": rs,
            "wall_ms": {kind: {r: agg[(kind, r)]["wall_s"] * 1e3 for r in rs} for kind in kinds},
            "reps_ms": {kind: {r: [m["wall_s"] * 1e3 for m in runs[(kind, r)]] for r in rs} for kind in kinds},
            "iters_ms": {kind: {r: [t for m in runs[(kind, r)] for t in m["iters_ms"]] for r in rs} for kind in kinds},
            "best": best,
            "speedup": {kind: 100 * (1 - agg[(kind, best[kind])]["wall_s"] / base) for kind in kinds},
            "map_ms_r1": t_map * 1e3, "shuffle_ms_r1": t_sh * 1e3, "rstar": rstar,
            "wire_bytes": {r: agg[("coded", r)]["wire_bytes"] for r in rs},
            "l_bytes": {r: agg[("coded", r)]["l_bytes"] for r in rs},
            "shuffle_ms": {r: agg[("coded", r)]["shuffle_s"] * 1e3 for r in rs},
        }, f)
