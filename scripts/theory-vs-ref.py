#!/usr/bin/env python3
"""`outrun theory` against the spec notes' numpy references, on parameters beyond the papers' tables.

    scripts/theory-vs-ref.py [REF_DIR]

REF_DIR holds seed-001-cegc-ref.py and seed-003-agc-ref.py (default: $OUTRUN_SPEC_REF, else
../shared/spec/ref beside the repository). The outrun binary is $OUTRUN_BIN, else
target/release/outrun. Needs numpy (the repository's .venv has it).

Compares, for every point of a grid no table of the papers holds:
  - `outrun theory sk`: s_κ and t* of CommFR-GC and of Ye–Abbe's scheme, and condition (8),
    against s_kappa_commfr, s_kappa_ya and kappa_condition8 (seed 001, Theorem 2); a point where
    the reference finds no t* must be `null` in ours;
  - `outrun theory agc-aet`: the restart model's average execution times of CGC, G-CGC (every
    s_max < d), AGC and G-AGC against the reference's fig3 with t = t_cp + t_cm (seed 003,
    eqs. 81–92; its hmat and group_joint followed for 100 epochs, not its default 40), within
    1e-9 relative;
  - `outrun theory bec`: the peeling threshold of the (d_v, d_c) ensemble against the minimum of
    x / (1 − (1 − x)^(d_c − 1))^(d_v − 1) on the reference's own grid (its ldpc() writes it out
    for (3, 6)), within the grid's spacing.

Prints one line per family with the points compared and the largest difference, and every
disagreement; exit 0 when all agree, 1 when one does not, 2 when the reference or outrun is
missing (one line saying which).
"""
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def fail(msg, code=2):
    print(f"theory-vs-ref: {msg}", file=sys.stderr)
    sys.exit(code)


def load(ref, name):
    path = ref / name
    if not path.is_file():
        fail(f"no {path} (pass the spec's ref/ directory, or set OUTRUN_SPEC_REF)")
    spec = importlib.util.spec_from_file_location(name.replace("-", "_")[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outrun(binary, *args):
    out = subprocess.run([str(binary), "theory", *map(str, args), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"outrun theory {' '.join(map(str, args))}: exit {out.returncode}: {out.stderr.strip()}", 1)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def fig3(agc, p, n, d, tcp, tcm, imax=100):
    """The reference's fig3(p, n, d, tcp, tcm, t = tcp + tcm), its own functions, followed for
    `imax` epochs: its default of 40 cuts off a tail of up to 4e-7 of the time at p = 0.6
    (outrun follows the chain until what is left is below 1e-15)."""
    t = tcp + tcm
    r = {}
    for sm in range(d):
        c = [1 / (d - sm)] * (sm + 1)
        r[f"CGC{sm}"] = agc.aet83(agc.hmat(n, sm, p, imax), c, tcp, tcm, t)
        r[f"G-CGC{sm}"] = agc.aet83(agc.group_joint(n, d, sm, p, imax), c, tcp, tcm, t)
    c = [1 / (d - s) for s in range(d)]
    r["AGC"] = agc.aet83(agc.hmat(n, d - 1, p, imax), c, tcp, tcm, t)
    r["G-AGC"] = agc.aet83(agc.group_joint(n, d, d - 1, p, imax), c, tcp, tcm, t)
    return r


def main():
    ref = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUTRUN_SPEC_REF", ROOT.parent / "shared/spec/ref"))
    binary = Path(os.environ.get("OUTRUN_BIN", ROOT / "target/release/outrun"))
    if not binary.is_file():
        fail(f"no {binary} (cargo build --release, or set OUTRUN_BIN)")
    try:
        import numpy as np
    except ImportError:
        fail("numpy does not import (scripts/setup.sh makes .venv with it)")
    cegc = load(ref, "seed-001-cegc-ref.py")
    agc = load(ref, "seed-003-agc-ref.py")
    bad = []

    # s_κ: n, s, m off Table I's (60 | 1000; s ∈ {3, 8, 13, 40, 90, 190}; m ∈ {2, 12, 10, 210})
    points, none = 0, 0
    for n in (24, 150, 480, 3000):
        for s in sorted({1, 4, n // 10, n // 4, n // 2}):
            for m in sorted({1, 3, 7, n // 20 or 1, n // 5}):
                if s >= n or m < 1:
                    continue
                for kappa, eps, c in ((100.0, 1e-2, 7.0), (1e4, 1e-6, 6.414), (1e3, 1e-3, 7.0)):
                    [got] = outrun(binary, "sk", "--n", n, "--s", s, "--m", m, "--kappa", kappa, "--eps", eps, "--c", c)
                    points += 1
                    tc = cegc.t_star(s + m, m, kappa, eps, c)
                    want_c = None if tc is None else {"s_kappa": s + m - tc, "t_star": tc}
                    ty = cegc.t_star(n, n - s, kappa, eps, c)
                    want_y = None if ty is None else {"s_kappa": n - ty, "t_star": ty}
                    none += (tc is None) + (ty is None)
                    cond = bool(cegc.kappa_condition8(s, m, kappa, eps, c))
                    for what, mine, theirs in (
                        ("CommFR-GC", got["commfr_gc"], want_c),
                        ("Ye–Abbe", got["ye_abbe"], want_y),
                        ("condition (8)", got["condition8"], cond),
                    ):
                        if mine != theirs:
                            bad.append(f"sk n={n} s={s} m={m} κ={kappa} ε={eps} C={c}: {what} {mine} vs reference {theirs}")
    print(f"theory sk: {points} points (n = 24..3000, κ = 100..1e4, ε = 1e-2..1e-6, C = 6.414 and 7), "
          f"s_κ and t* of both schemes and condition (8) equal the reference's ({none} answers with no t*)")

    # restart-model AET: n, d, t_cp, t_cm, p off Fig. 3's (20, 3, 3, 13)
    points, worst = 0, 0.0
    for n, d, tcp, tcm in ((12, 2, 1.0, 5.0), (31, 4, 2.0, 7.0), (45, 5, 3.0, 30.0), (64, 3, 0.5, 2.0)):
        ps = (0.02, 0.15, 0.35, 0.6)
        rows = outrun(binary, "agc-aet", "--n", n, "--d", d, "--tcp", tcp, "--tcm", tcm, "--p", ",".join(map(str, ps)))
        for row in rows:
            want = fig3(agc, row["p"], n, d, tcp, tcm)
            names = {f"CGC (s_max = {k})": f"CGC{k}" for k in range(d)}
            names.update({f"G-CGC (s_max = {k})": f"G-CGC{k}" for k in range(d)})
            names.update({"AGC": "AGC", "G-AGC": "G-AGC"})
            if set(row["aet"]) != set(names):
                bad.append(f"agc-aet n={n} d={d}: schemes {sorted(row['aet'])}, reference {sorted(names.values())}")
                continue
            for mine, theirs in names.items():
                rel = abs(row["aet"][mine] - want[theirs]) / abs(want[theirs])
                worst = max(worst, rel)
                points += 1
                if not rel <= 1e-9:
                    bad.append(f"agc-aet n={n} d={d} t_cp={tcp} t_cm={tcm} p={row['p']}: {mine} {row['aet'][mine]} vs reference {want[theirs]}")
    print(f"theory agc-aet: {points} values (n = 12..64, d = 2..5, p = 0.02..0.6), largest relative difference {worst:.1e}")

    # the BEC threshold on the reference's grid
    x = np.linspace(1e-7, 1, 2000001)
    points, worst = 0, 0.0
    for dv, dc in ((3, 6), (3, 5), (4, 8), (5, 10), (3, 9)):
        [got] = outrun(binary, "bec", "--dv", dv, "--dc", dc)
        want = float(np.min(x / (1 - (1 - x) ** (dc - 1)) ** (dv - 1)))
        diff = abs(got["threshold"] - want)
        worst, points = max(worst, diff), points + 1
        if not diff <= 1e-6:
            bad.append(f"bec ({dv}, {dc}): {got['threshold']} vs reference {want}")
    print(f"theory bec: {points} ensembles, largest difference {worst:.1e} (grid spacing 5e-7)")

    for line in bad:
        print(f"DISAGREES: {line}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
