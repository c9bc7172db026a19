#!/usr/bin/env python3
"""Compare a PageRank run's ranks.txt with networkx.pagerank on the same edge list (an
independent oracle; needs networkx and scipy: pip install networkx scipy).

    scripts/oracles/pagerank_networkx.py RUN_DIR EDGE_LIST [--directed] [--alpha 0.85]

networkx spreads dangling vertices' rank uniformly, like job.dangling = "uniform" (the default),
and iterates to its own tolerance: run outrun to convergence (job.tol, or enough iterations).
Prints the largest absolute and relative differences; exits 1 if the largest absolute
difference exceeds 1e-12."""
import argparse, sys

import networkx as nx

ap = argparse.ArgumentParser()
ap.add_argument("run_dir")
ap.add_argument("edges")
ap.add_argument("--directed", action="store_true")
ap.add_argument("--alpha", type=float, default=0.85)
a = ap.parse_args()
ranks = {}
for line in open(f"{a.run_dir}/ranks.txt"):
    v, r = line.split()
    ranks[int(v)] = float(r)
g = nx.DiGraph() if a.directed else nx.Graph()
size_line = first = False
for n, line in enumerate(open(a.edges)):
    if n == 0 and line.lower().startswith("%%matrixmarket"):
        size_line = True  # the first line after the comments gives the size, not an edge
        continue
    f = line.replace(",", " ").split()
    if not f or f[0][0] in "#%":
        continue
    if size_line:
        size_line = False
        continue
    if not first:
        first = True
        if not f[0].lstrip("-").replace(".", "").isdigit() and not f[1].lstrip("-").replace(".", "").isdigit():
            continue  # a header: source,target
    g.add_edge(int(f[0]), int(f[1]))
pr = nx.pagerank(g, alpha=a.alpha, tol=1e-15, max_iter=100000)
assert set(pr) == set(ranks), "the vertex sets differ"
d = max(abs(pr[v] - ranks[v]) for v in pr)
rel = max(abs(pr[v] - ranks[v]) / pr[v] for v in pr)
print(f"{len(pr)} vertices: max |outrun - networkx| = {d:.2e}, max relative {rel:.2e}")
sys.exit(0 if d <= 1e-12 else 1)
