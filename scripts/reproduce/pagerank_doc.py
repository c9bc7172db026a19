"""Write docs/results/pagerank.md from the runs of scripts/reproduce-pagerank.sh (Markdown on
stdout): the setting, the per-phase reports of scripts/bench/pagerank.py for both Shuffle
schedules (REPORT: every transfer at once, the runs in OUT_DIR; TURNS_REPORT: one turn at a time,
the thesis's schedule, the runs in OUT_DIR/turns), scenario 3's (S3_REPORT: taking turns, the
coded Shuffle and, where it ran, the uncoded; the runs in OUT_DIR/s3) and the comparison with
the thesis's EC2 figures, taken from the turn-taking runs. Every number is read from the run
directories and the files the script wrote.

With OUTRUN_REPRODUCE_VALUES set (by `outrun reproduce pagerank-ec2`), also writes ours for the
registry's rows to that file as JSON: {"values": {row key: number or null}, "why": {row key:
line}, "notes": [line, ...]}; a row's why says why it has no value, or, from the measured terms
that differ, why its value is not the thesis's (shown only where the registry's tolerance finds
that it is not).

usage: pagerank_doc.py OUT_DIR RATE REPORT TURNS_REPORT S3_REPORT
"""
import glob
import json
import math
import os
import sys
import tomllib

from iterations import tbf

out, rate, report, turns_report, s3_report = sys.argv[1:6]
# the thesis, §2.7 and Remark 14 (scenario 2: T_Map = 1.649, T_Shuffle = 43.78, units unstated)
THESIS = {"s1": (5, 43.4), "s2": (4, 50.8), "s3": (4, 41.8)}
T_MAP, T_SHUFFLE = 1.649, 43.78
values_of = lambda where: json.loads(open(os.path.join(where, "loads.jsonl")).readline())["values"]
values_total = values_of(out)


def read(path, default="not measured"):
    return open(path).read().strip() if os.path.exists(path) else default


class Sweep:
    """One sweep's runs: the figures of scripts/bench/pagerank.py (its JSON), per kind (coded, and
    uncoded where it ran) and r."""

    def __init__(self, where, report):
        self.fig = fig = json.load(open(os.path.join(where, "summary.json")))
        self.rs = fig["rs"]
        self.wall = {kind: {int(r): v for r, v in d.items()} for kind, d in fig["wall_ms"].items()}
        self.reps_ms = {kind: {int(r): v for r, v in d.items()} for kind, d in fig["reps_ms"].items()}
        self.iters_ms = {kind: {int(r): v for r, v in d.items()} for kind, d in fig["iters_ms"].items()}
        self.best, self.speedup = fig["best"], fig["speedup"]
        self.w = {int(r): float(v) for r, v in fig["wire_bytes"].items()}
        self.l = {int(r): float(v) for r, v in fig["l_bytes"].items()}
        self.sh = {int(r): float(v) for r, v in fig["shuffle_ms"].items()}
        runs = glob.glob(os.path.join(where, "runs", "*", "summary.json"))
        self.iters = min(json.load(open(f))["iterations"] for f in runs)
        self.reps = len(runs) // (len(self.wall) * len(self.rs))
        self.lines = open(report).read().splitlines()
        self.map_ratio = fig["map_ms_r1"] / fig["shuffle_ms_r1"]
        b = self.best["coded"]
        # the spread of an r's time: its repetitions' means, or with one repetition its measured
        # iterations (after the first); one of one measures no spread
        self.by_iteration = self.reps < 2
        self.samples = (self.iters_ms if self.by_iteration else self.reps_ms)["coded"]
        # the r whose range (iteration ms) overlaps the best r's: with them the runs do not say
        # which r is fastest
        if len(self.samples[b]) > 1:
            lo, hi = min(self.samples[b]), max(self.samples[b])
            self.ties = [r for r in sorted(self.samples) if r != b and min(self.samples[r]) <= hi and max(self.samples[r]) >= lo]
        else:
            self.ties = [r for r in self.rs if r != b]

    def at(self, r):
        """The coded Shuffle's speedup at r over r = 1, %."""
        return 100 * (1 - self.wall["coded"][r] / self.wall["coded"][1])

    def spread_at(self, r):
        """The smallest and largest speedup at r over r = 1 (%) its samples allow: each
        repetition against the same repetition of r = 1 (they ran interleaved), or, from the
        measured iterations of one repetition, the widest; None with one sample each."""
        a, b = self.samples[r], self.samples[1]
        if len(a) < 2 and len(b) < 2:
            return None
        if self.by_iteration:
            xs = [100 * (1 - max(a) / min(b)), 100 * (1 - min(a) / max(b))]
        else:
            xs = [100 * (1 - x / y) for x, y in zip(a, b)]
        return [min(xs), max(xs)]

    def span(self, r):
        return f"r = {r}: {min(self.samples[r]):.0f}–{max(self.samples[r]):.0f} ms"

    def best_note(self):
        return f" (not resolved from r = {', '.join(map(str, self.ties))})" if self.ties else ""

    def tie_words(self):
        if len(self.samples[self.best["coded"]]) < 2:
            return "one measured iteration of one repetition measures no spread"
        both = sorted([self.best["coded"]] + self.ties)
        what = "measured iterations' times" if self.by_iteration else "repetitions' iteration times"
        return (f"the {what} of " + ", ".join(f"r = {r}" for r in both)
                + " overlap (" + "; ".join(self.span(r) for r in both) + ")")

    def resolved(self):
        """The best r's line when resolved."""
        what = "measured iterations" if self.by_iteration else "repetitions"
        return f"its {what} ({self.span(self.best['coded'])}) are all faster than every other r's"

    def body(self):
        """The report below its title line."""
        return "\n".join(self.lines[1:]).strip("\n")


par, turns = Sweep(out, report), Sweep(os.path.join(out, "turns"), turns_report)
s3 = Sweep(os.path.join(out, "s3"), s3_report)
s3b, s3s = s3.best["coded"], s3.speedup["coded"]
K, n, rs = par.fig["servers"], par.fig["n"], par.rs
drops = read(os.path.join(out, "drops"), "? ?").split()
ratio_thesis = T_MAP / T_SHUFFLE


def ranks_agree(dirs):
    """Every run's final ranks (its ranks.txt) against the first run's: (runs, runs bit-identical to
    it, largest |difference| / largest rank)."""
    files = [f for d in dirs for f in sorted(glob.glob(os.path.join(d, "runs", "*", "ranks.txt")))]
    read_ranks = lambda f: [float(line.split()[1]) for line in open(f)]
    first = read_ranks(files[0])
    scale = max(abs(x) for x in first)
    same, worst = 0, 0.0
    for f in files:
        got = read_ranks(f)
        assert len(got) == len(first), f"{f}: {len(got)} ranks, the first run has {len(first)}"
        same += got == first
        worst = max(worst, max(abs(a - b) for a, b in zip(got, first)) / scale)
    return len(files), same, worst


def model(t_map, t_sh, r):
    """Remark 14's T(r) without T_Reduce: r·T_Map + T_Shuffle/r."""
    return r * t_map + t_sh / r


def remark14_speedup(t_map, t_sh, r):
    return 100 * (1 - model(t_map, t_sh, r) / model(t_map, t_sh, 1))


units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
rate_bytes = next(float(rate[: -len(u)]) * f / 8 for u, f in units.items() if rate.endswith(u))
serial_s = turns.l[1] / rate_bytes
# the thesis's 50.8 % at r = 4 with a Map 4 times r = 1's (and a Reduce no shorter) leaves its Shuffle this share
thesis_sh4 = ((1 - THESIS["s2"][1] / 100) * (T_MAP + T_SHUFFLE) - 4 * T_MAP) / T_SHUFFLE
tb, ts = turns.best["coded"], turns.speedup["coded"]
# at the thesis's best r
s4 = turns.at(THESIS["s2"][0])
at4 = f" (at r = {THESIS['s2'][0]}, the thesis's best: {s4:.1f} %)" if tb != THESIS["s2"][0] else ""
s3_4 = s3.at(THESIS["s3"][0])
s3_at4 = f" (at r = {THESIS['s3'][0]}, the thesis's best: {s3_4:.1f} %)" if s3b != THESIS["s3"][0] else ""

print(par.lines[0] + "\n")
print("Produced by `sudo make reproduce-pagerank` (`scripts/reproduce-pagerank.sh`; `sudo outrun reproduce")
print("pagerank-ec2` runs the same and prints the comparison); every number below was measured by that command on")
print(f"this project's development machine (2 vCPUs, the {K} or {s3.fig['servers']} servers' processes sharing them), and is rewritten when")
print("it is run again.\n")
print("## Setup\n")
print(f"- **The thesis's scenario 2** (§2.7, Fig. 2.8b): an Erdős–Rényi graph with n = {n} and p = 0.3 — the same size")
print(f"  and density, drawn here by the runtime's generator (`graph.kind = \"er\"`, seed 3): {values_total} directed edges,")
print(f"  a PageRank value each per iteration; K = {K} servers (the thesis's master only collects timings, ours has none).")
print(f"- **Cluster**: {K} emulated hosts (network namespaces, `launch/emu-cluster`), one server per host, every link")
print(f"  shaped to **{rate}** both ways ({tbf(out)}; the thesis: 100 Mbps per server). Link check, 10 MB between two hosts:")
print(f"  {read(os.path.join(out, 'link'))}. Packets dropped on all links: {drops[0]} sent, {drops[1]} received.")
print("- **Two Shuffle schedules**, the same bytes: *one turn at a time* (`scheme.shuffle = \"turns\"`: every")
print("  group's turns in lexicographic order, a barrier of all servers before each, so one server uses the network at")
print("  a time — the thesis's schedule, §2.7, a barrier before each turn in the authors' code) and *every transfer at")
print("  once* (our default: groups with different members share the links).")
print(f"- **Runs**: coded and uncoded Shuffle for r = {rs[0]}..{rs[-1]}, {turns.reps} interleaved repetitions of {turns.iters} iterations")
print(f"  (turns) and {par.reps} of {par.iters} (at once), real computation (the Map, encoding, decoding and Reduce of every")
print("  value). The thesis times one iteration; the means below are over the iterations after the first. r = 1 is")
print("  conventional PageRank for both schedules and shuffles.")
count, same, worst = ranks_agree([os.path.join(out, "turns"), out])
print(f"- Both schedules, coded and uncoded, compute the same PageRank: of the {count} runs' final ranks (`ranks.txt`),")
print(f"  {same} are bit-identical to the first run's, and the largest difference is {worst:.1e} of the largest rank (the")
print("  `mpi_pagerank` tests check the engine's ranks against a centralised PageRank, and the schedules' against each other).")
K3, n3 = s3.fig["servers"], s3.fig["n"]
p3 = tomllib.load(open(glob.glob(os.path.join(out, "s3", "runs", "*", "config.toml"))[0], "rb"))["graph"]["p"]
drops3 = read(os.path.join(out, "s3", "drops"), "? ?").split()
s3_uncoded = "uncoded" in s3.wall
s3_kinds = "coded and uncoded" if s3_uncoded else "the coded"
s3_not = "" if s3_uncoded else "; the uncoded Shuffle not run"
count3, same3, worst3 = ranks_agree([os.path.join(out, "s3")])
print(f"- **The thesis's scenario 3** (Fig. 2.8c): Erdős–Rényi with n = {n3} and p = {p3} (seed 3): {values_of(os.path.join(out, 's3'))} directed")
print(f"  edges, on K = {K3} servers, {K3} emulated hosts at {rate} (packets dropped: {drops3[0]} sent, {drops3[1]} received); the")
print(f"  {s3_kinds} Shuffle taking turns for r = {s3.rs[0]}..{s3.rs[-1]}, {s3.reps} repetition of {s3.iters} iterations (a coded run's setup")
print(f"  makes its C({K3}, r+1) multicast groups' communicators: {K3 - 1} choose r a server, minutes at r = 5 here{s3_not});")
print(f"  of its {count3} runs' final ranks {same3} are bit-identical to the first's (largest difference {worst3:.1e}).\n")
print("## One turn at a time (the thesis's schedule)\n")
print(turns.body() + "\n")
print("## Every transfer at once (our default)\n")
print(par.body() + "\n")
print("## Scenario 3, one turn at a time\n")
print(s3.body() + "\n")
print("## Against the thesis\n")
print("The thesis's servers took turns, so ours are compared with the turn-taking runs; the last column is our")
print("default schedule's.\n")
print("| scenario | graph | K | thesis: best r | thesis: speedup over r = 1 | ours (turns): best r | ours (turns): speedup | ours (at once): best r, speedup |")
print("|---|---|---|---|---|---|---|---|")
print(f"| 1 | TheMarker Cafe, n = 69 360 | 6 | {THESIS['s1'][0]} | {THESIS['s1'][1]} % | not run | the graph is not in the repository | – |")
print(f"| 2 | ER(12 600, 0.3) | 10 | {THESIS['s2'][0]} | {THESIS['s2'][1]} % | {tb}{turns.best_note()} | {ts:.1f} %{at4} "
      f"| {par.best['coded']}{par.best_note()}, {par.speedup['coded']:.1f} % |")
print(f"| 3 | ER(90 090, 0.01) | 15 | {THESIS['s3'][0]} | {THESIS['s3'][1]} % | {s3b}{s3.best_note()} | {s3s:.1f} %{s3_at4} | not run |")
print()
ratio = lambda sw: ", ".join(f"r = {r}: {sw.wall['coded'][r] / sw.wall['uncoded'][r]:.2f}" for r in sw.rs)
# a per-r figure of a sweep against its r = 1's, for every r the sweep ran
fall = lambda d: ", ".join(f"{d[r] / d[1]:.2f}" for r in sorted(d))
further = turns.sh[4] / turns.sh[1] < par.sh[4] / par.sh[1]
smaller = turns.map_ratio < ratio_thesis
print("**Reading it.**")
print(f"- *r = 1's Shuffle, taking turns*, with unpacking: {turns.fig['shuffle_ms_r1'] / 1e3:.1f} s; the {turns.l[1] / 1e6:.0f} MB in sequence at {rate}")
print(f"  are {serial_s:.1f} s, the thesis's T_Shuffle {T_SHUFFLE} s (its Python code also pickles, and sends a header before")
print(f"  each message); ours at once {par.fig['shuffle_ms_r1'] / 1e3:.1f} s.")
print(f"- *Taking turns, the coded Shuffle falls {'further' if further else 'no further'} than at once*: to {fall(turns.sh)} of r = 1's for")
print(f"  r = {rs[0]}..{rs[-1]} (at once: {fall(par.sh)}; L-bytes, a multicast counted once: {fall(turns.l)}; wire bytes, once")
print(f"  per receiver: {fall(turns.w)}). The thesis's 50.8 % at r = 4, with a Map 4 times r = 1's and a Reduce no")
print(f"  shorter, leaves its Shuffle at most {thesis_sh4:.2f} of r = 1's. In a turn an uncoded sender sends each of its r")
print("  receivers its segment (r unicasts over its one link); a coded one broadcasts one XOR as long as a segment")
print("  (`MPI_Ibcast`: how many times it crosses the sender's link is the MPI library's broadcast algorithm's choice).")
print(f"  Coded against uncoded (iteration time) at the same r, taking turns: {ratio(turns)}.")
print(f"- *The Map is a {'smaller' if smaller else 'larger'} share of ours.* Taking turns, our Map (with packing) is {turns.map_ratio:.4f} of the Shuffle at")
print(f"  r = 1 ({turns.fig['map_ms_r1']:.0f} ms), the thesis's {ratio_thesis:.4f} (T_Map = {T_MAP}, T_Shuffle = {T_SHUFFLE}: a Python Map):")
print(f"  Remark 14's r* = √(T_Shuffle/T_Map) is {turns.fig['rstar']:.1f} with our times, {math.sqrt(T_SHUFFLE / T_MAP):.2f} with the thesis's, and its")
print(f"  model (a Shuffle falling as 1/r) gives {remark14_speedup(turns.fig['map_ms_r1'], turns.fig['shuffle_ms_r1'], 4):.1f} % at r = 4 with ours and "
      f"{remark14_speedup(T_MAP, T_SHUFFLE, 4):.1f} % with the thesis's.")
if turns.ties:
    print(f"- *The best coded r taking turns is not resolved*: {turns.tie_words()}, so this run does not say which r")
    print("  is fastest (the registry's best-r row is left without a value).")
else:
    print(f"- *The best coded r taking turns is resolved*: {turns.resolved()}.")
print("- *At once (our default)*, our servers shuffle in parallel, each over its own link, so a Shuffle takes about the")
print("  bytes into one server's link, and a coded multicast to r members is r copies on their links (MPI has no")
print(f"  physical multicast). Coded against uncoded at the same r: {ratio(par)}. The best coded r at once is")
print(f"  {par.best['coded']}{par.best_note()}, {par.speedup['coded']:.1f} % faster than r = 1, uncoded at its best r ({par.best['uncoded']}) {par.speedup['uncoded']:.1f} %.")
print(f"  r = 1 at once takes {par.wall['coded'][1] / 1e3:.2f} s an iteration, {turns.wall['coded'][1] / par.wall['coded'][1]:.1f}× less than taking turns.")
serial3 = s3.l[1] / rate_bytes
print(f"- *Scenario 3, taking turns*: r = 1's Shuffle {s3.fig['shuffle_ms_r1'] / 1e3:.1f} s (its {s3.l[1] / 1e6:.0f} MB in sequence: {serial3:.1f} s); the coded")
print(f"  Shuffle falls to {fall(s3.sh)} of r = 1's for r = {s3.rs[0]}..{s3.rs[-1]} (L-bytes: {fall(s3.l)}; wire bytes: {fall(s3.w)}), and the Map is {s3.map_ratio:.4f} of r = 1's")
print(f"  Shuffle (Remark 14's r* {s3.fig['rstar']:.1f}). Iteration ms: " + ", ".join(f"r = {r} {s3.wall['coded'][r]:.0f}" for r in s3.rs)
      + f"; best r {s3b}, {s3s:.1f} % faster than r = 1 (the thesis: r = {THESIS['s3'][0]}, {THESIS['s3'][1]} %); at r = 4 {s3_4:.1f} %.")
if s3.ties:
    print(f"  Its best r is not resolved: {s3.tie_words()}.")
else:
    print(f"  Its best r is resolved: {s3.resolved()}.")
if s3_uncoded:
    print(f"  Coded against uncoded (iteration time) at the same r: {ratio(s3)}; the uncoded Shuffle's best r {s3.best['uncoded']},")
    print(f"  {s3.speedup['uncoded']:.1f} % faster than r = 1.")

path = os.environ.get("OUTRUN_REPRODUCE_VALUES")
if path:
    why = {
        "s1": "scenario 1's graph (a subgraph of TheMarker Cafe, Fire et al. 2011) is not in the repository, and this host has no network to fetch it",
    }
    terms = (f"taking turns as the thesis's servers did, our coded Shuffle at r = 4 is {turns.sh[4] / turns.sh[1]:.2f} of r = 1's "
             f"(the thesis's at most {thesis_sh4:.2f}) and our Map {turns.map_ratio:.4f} of the r = 1 Shuffle (the thesis's "
             f"{ratio_thesis:.4f}: a Python Map), so Remark 14's r* is {turns.fig['rstar']:.1f} with our times ({math.sqrt(T_SHUFFLE / T_MAP):.2f} the thesis's)")
    # a value's why is shown only where the registry's tolerance finds that it deviates
    why["s2"] = f"{ts:.1f} % at r = {tb}{at4}: {terms}"
    if turns.ties:
        why["s2_best_r"] = f"the runs do not resolve it: {turns.tie_words()}"
    else:
        why["s2_best_r"] = f"r = {tb} ({turns.wall['coded'][tb]:.0f} ms an iteration; r = 4: {turns.wall['coded'][4]:.0f} ms): {terms}"
    why["s2_r4"] = f"{s4:.1f} % at r = 4: {terms}"
    terms3 = (f"taking turns, our coded Shuffle at r = 4 is {s3.sh[4] / s3.sh[1]:.2f} of r = 1's and our Map {s3.map_ratio:.4f} "
              f"of the r = 1 Shuffle (Remark 14's r* {s3.fig['rstar']:.1f}); the thesis gives no phase times for scenario 3")
    why["s3"] = f"{s3s:.1f} % at r = {s3b}{s3_at4}: {terms3}"
    why["s3_r4"] = f"{s3_4:.1f} % at r = 4: {terms3}"
    if s3.ties:
        why["s3_best_r"] = f"the runs do not resolve it: {s3.tie_words()}"
    else:
        why["s3_best_r"] = f"r = {s3b} ({s3.wall['coded'][s3b]:.0f} ms an iteration; r = 4: {s3.wall['coded'][4]:.0f} ms): {terms3}"
    notes = [
        f"measured on {K} emulated hosts at {rate}; one turn at a time (the thesis's schedule): {turns.reps} repetitions of {turns.iters} iterations per run, "
        "mean ms per iteration after the first; coded: " + ", ".join(f"r = {r} {turns.wall['coded'][r]:.0f}" for r in rs)
        + "; uncoded: " + ", ".join(f"r = {r} {turns.wall['uncoded'][r]:.0f}" for r in rs),
        f"taking turns, best r coded {tb} ({ts:.1f} % over r = 1), uncoded {turns.best['uncoded']} ({turns.speedup['uncoded']:.1f} %); coded repetitions: "
        + "; ".join(turns.span(r) for r in rs),
        "taking turns, coded Shuffle / r = 1's: " + ", ".join(f"r = {r} {turns.sh[r] / turns.sh[1]:.2f}" for r in rs)
        + f" (the thesis's at r = 4: at most {thesis_sh4:.2f}); L-bytes / r = 1's: {fall(turns.l)}; wire bytes: {fall(turns.w)}",
        f"taking turns, r = 1: Map {turns.fig['map_ms_r1']:.1f} ms, Shuffle {turns.fig['shuffle_ms_r1'] / 1e3:.1f} s ({turns.l[1] / 1e6:.0f} MB in sequence at {rate}: "
        f"{serial_s:.1f} s; the thesis's T_Shuffle {T_SHUFFLE} s), Map / Shuffle {turns.map_ratio:.4f} (the thesis's {ratio_thesis:.4f})",
        f"every transfer at once (our default), {par.reps} repetitions of {par.iters} iterations: best r coded {par.best['coded']}{par.best_note()} "
        f"({par.speedup['coded']:.1f} % over r = 1), uncoded {par.best['uncoded']} ({par.speedup['uncoded']:.1f} %); coded: "
        + ", ".join(f"r = {r} {par.wall['coded'][r]:.0f}" for r in rs) + " ms; coded Shuffle / r = 1's: " + fall(par.sh),
        f"scenario 3, ER({n3}, {p3}) on {K3} emulated hosts, taking turns, {s3_kinds} Shuffle, {s3.reps} repetition of {s3.iters} iterations; ms per "
        "iteration after the first, coded: " + ", ".join(f"r = {r} {s3.wall['coded'][r]:.0f}" for r in s3.rs)
        + ("; uncoded: " + ", ".join(f"r = {r} {s3.wall['uncoded'][r]:.0f}" for r in s3.rs) if s3_uncoded else "")
        + f"; best r {s3b} ({s3s:.1f} % over r = 1); the measured iterations: " + "; ".join(s3.span(r) for r in s3.rs)
        + f"; coded Shuffle / r = 1's: {fall(s3.sh)}; r = 1: Map {s3.fig['map_ms_r1']:.1f} ms, Shuffle {s3.fig['shuffle_ms_r1'] / 1e3:.1f} s",
        f"the runs and their page: {out}/ (pagerank.md there; `sudo make reproduce-pagerank` writes it to docs/results/)",
    ]
    with open(path, "w") as f:
        json.dump({
            "values": {
                "s1": None, "s2": ts, "s2_best_r": None if turns.ties else tb, "s2_r4": s4,
                "s3": s3s, "s3_best_r": None if s3.ties else s3b, "s3_r4": s3_4,
            },
            "why": why,
            "notes": notes,
            # each speedup is of the repetitions' mean: the registry says "reproduced" only
            # when every repetition would
            "spread": {k: v for k, v in {
                "s2": turns.spread_at(tb), "s2_r4": turns.spread_at(THESIS["s2"][0]),
                "s3": s3.spread_at(s3b), "s3_r4": s3.spread_at(THESIS["s3"][0]),
            }.items() if v},
        }, f)
