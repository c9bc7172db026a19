#!/usr/bin/env python3
"""The rooms of the architecture, checked over the source (`make lint`; docs/architecture.md).

1. Layers: each crate imports only the crates below it (config -> plan -> proto -> drivers). The
   config imports nothing of the plan, the plan nothing of the protocol (the roles live there).
2. No import circle between the modules of a crate: a module may import its own children
   (`mod.rs` and its files), never a module that imports it back, directly or not.
3. No scheme or job in a driver: the names of schemes (`scheme.kind`), jobs (`job.kind`) and
   the job types never appear in the code of crates/{engine,sim,driver}/src (comments aside).

Prints one line per violation and exits 1; prints nothing and exits 0 when the rooms hold.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRATES = ROOT / "crates"

# crate directory -> the crates of ours it may import (besides the ones every crate may: codes, runlog)
LAYERS = {
    "config": set(),
    "plan": {"config"},
    "proto": {"config", "plan"},
    "python": set(),
    "workloads": {"config", "plan", "proto", "python"},
    "driver": {"config", "plan", "proto", "workloads"},
    "engine": {"config", "plan", "proto", "workloads", "driver"},
    "sim": {"config", "plan", "proto", "workloads", "driver"},
    "report": set(),
    "reproduce": {"config", "plan", "workloads", "sim"},
}
BASE = {"codes", "runlog"}


def code_lines(path):
    """The file's lines with `//` comments and string-free doc lines removed."""
    out = []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            out.append("")
            continue
        # a trailing comment (not inside a string: good enough for this code base)
        if "//" in line and line.count('"') % 2 == 0:
            line = line[: line.index("//")] if not re.search(r'"[^"]*//[^"]*"', line) else line
        out.append(line)
    return out


def crate_of(name):
    return name.replace("outrun_", "")


def check_layers(errors):
    for crate, allowed in LAYERS.items():
        for f in sorted((CRATES / crate / "src").rglob("*.rs")):
            for n, line in enumerate(code_lines(f), 1):
                for used in re.findall(r"(?:\buse |\b)outrun_([a-z]+)::|\buse outrun_([a-z]+)\b", line):
                    used = used[0] or used[1]
                    if used not in allowed | BASE | {crate}:
                        errors.append(f"{f.relative_to(ROOT)}:{n}: outrun-{crate} imports outrun-{used}, which is not below it")


def module_of(src, f):
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


def check_cycles(errors):
    for crate in sorted(LAYERS):
        src = CRATES / crate / "src"
        graph = {}
        for f in sorted(src.rglob("*.rs")):
            me = module_of(src, f)
            deps = set()
            text = "\n".join(code_lines(f))
            # `#[cfg(test)] mod tests { ... }` blocks are children of the module: their imports count
            for path in re.findall(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
                segs = path.split("::")
                # the longest prefix that is a module file of this crate
                for k in range(len(segs), 0, -1):
                    cand = "::".join(segs[:k])
                    if (src / Path(*segs[:k])).with_suffix(".rs").exists() or (src / Path(*segs[:k]) / "mod.rs").exists():
                        deps.add(cand)
                        break
            # a module may import its own children and its own parents' items it is part of
            graph[me] = {d for d in deps if d != me and not d.startswith(me + "::") and not (me.startswith(d + "::"))}
        # strongly connected components (Tarjan)
        index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on.add(v)
            for w in graph.get(v, ()):
                if w not in graph:
                    continue
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))

        sys.setrecursionlimit(10000)
        for v in sorted(graph):
            if v not in index:
                visit(v)
        for comp in comps:
            names = ", ".join(c or "(root)" for c in comp)
            errors.append(f"crates/{crate}/src: an import circle between modules {names}")


def names():
    """Every scheme and job name a config may give, and the job types."""
    scheme = (CRATES / "config/src/scheme.rs").read_text()
    block = scheme[scheme.index("const VARIANTS"):]
    block = block[: block.index("];")]
    kinds = set(re.findall(r'\("([a-z0-9-]+)",', block))
    job = (CRATES / "config/src/job.rs").read_text()
    kinds |= {"gd", "fl", "python", "matvec", "pagerank"}
    kinds -= {"ignore", "median", "oracle"}  # ordinary words: their scheme types are checked below
    types = {"GradientDescent", "Federated", "Matvec", "Pagerank", "Parity", "CodedFedL", "Codedfedl", "GcDc", "GcSc", "HierKind", "Krum", "Bulyan", "Fedavg", "Diversefl"}
    assert "job.kind" in job
    return kinds, types


def check_drivers(errors):
    kinds, types = names()
    word = re.compile(r'"(' + "|".join(sorted(map(re.escape, kinds), key=len, reverse=True)) + r')"')
    ident = re.compile(r"\b(" + "|".join(sorted(types)) + r")\b")
    for crate in ("engine", "sim", "driver"):
        for f in sorted((CRATES / crate / "src").rglob("*.rs")):
            for n, line in enumerate(code_lines(f), 1):
                for m in word.findall(line):
                    errors.append(f"{f.relative_to(ROOT)}:{n}: the driver names the scheme or job \"{m}\"")
                for m in ident.findall(line):
                    errors.append(f"{f.relative_to(ROOT)}:{n}: the driver names {m}")


def main():
    errors = []
    check_layers(errors)
    check_cycles(errors)
    check_drivers(errors)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
