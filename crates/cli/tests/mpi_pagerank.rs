//! Coded PageRank through `mpirun` (note seed-004-ch2, T8 and T9): for every computation load
//! r, the coded ranks are bit-equal to the uncoded ranks on the same graph, and both equal the
//! test's own centralised PageRank within 1e-12; the bytes the servers multicast equal the
//! note's coded byte counts exactly; bad graph files fail with one line naming the line.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;

/// The test's graph, written as a SNAP edge list with arbitrary ids, comments and tabs:
/// vertex v has id 1000 + 7v; edges from a deterministic formula, plus a few directed sinks.
fn write_graph(path: &Path, n: u64) -> Vec<(u64, u64)> {
    let mut edges = Vec::new();
    for a in 0..n {
        for b in a..n {
            if (a * 31 + b * 17 + a * b) % 11 == 0 || b == a + 1 {
                edges.push((1000 + 7 * a, 1000 + 7 * b));
            }
        }
    }
    let mut text = String::from("# test graph\n# FromNodeId\tToNodeId\n");
    for (a, b) in &edges {
        text.push_str(&format!("{a}\t{b}\n"));
    }
    std::fs::write(path, text).unwrap();
    edges
}

/// Centralised PageRank: Π(i) = (1−α)/n + α(Σ_{j→i} Π(j)/deg⁺(j) + m/n), m the dangling
/// mass; from the edge list, by id.
fn pagerank(edges: &[(u64, u64)], directed: bool, alpha: f64, iterations: usize) -> BTreeMap<u64, f64> {
    let mut out: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for &(a, b) in edges {
        out.entry(a).or_default().insert(b);
        out.entry(b).or_default();
        if !directed {
            out.entry(b).or_default().insert(a);
        }
    }
    let n = out.len() as f64;
    let mut pi: BTreeMap<u64, f64> = out.keys().map(|&v| (v, 1.0 / n)).collect();
    for _ in 0..iterations {
        let mass: f64 = out.iter().filter(|(_, t)| t.is_empty()).map(|(v, _)| pi[v]).sum();
        let mut sum: BTreeMap<u64, f64> = out.keys().map(|&v| (v, 0.0)).collect();
        for (j, targets) in &out {
            for i in targets {
                *sum.get_mut(i).unwrap() += pi[j] / targets.len() as f64;
            }
        }
        pi = sum.into_iter().map(|(v, s)| (v, (1.0 - alpha) / n + alpha * (s + mass / n))).collect();
    }
    pi
}

fn read_ranks(path: &Path) -> BTreeMap<u64, f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (id, v) = l.split_once(' ').unwrap();
            (id.parse().unwrap(), v.parse().unwrap())
        })
        .collect()
}

const ITERATIONS: usize = 12;

fn config(graph: &str, directed: bool) -> String {
    format!(
        r#"
[run]
name = "pagerank"
iterations = {ITERATIONS}

[job]
kind = "pagerank"
damping = 0.85

[graph]
{graph}
directed = {directed}

[scheme]
kind = "coded-pagerank"
servers = 4
r = 2
"#
    )
}

/// `phases.csv`'s rows, column name → value.
fn phases(rd: &Path) -> Vec<BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(rd.join("phases.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines.map(|l| header.iter().zip(l.split(',')).map(|(h, v)| (h.to_string(), v.parse().unwrap())).collect()).collect()
}

/// One run of the test's config (see `common::run_config`).
fn run(dir: &Scratch, text: &str, sets: &[String], tag: &str) -> (Option<i32>, String, Option<std::path::PathBuf>) {
    run_config(dir, text, sets, tag, std::time::Duration::from_secs(60))
}

/// Every r for K servers, coded and uncoded: bit-equal to each other, within 1e-12 of the
/// reference. Returns each r's ranks file.
fn every_r(dir: &Scratch, text: &str, servers: usize, extra: &[&str], want: &BTreeMap<u64, f64>) -> Vec<String> {
    let mut each = vec![];
    for r in 1..=servers {
        let mut files = vec![];
        for kind in ["coded-pagerank", "uncoded-pagerank"] {
            let mut sets: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
            sets.extend([format!("scheme.kind={kind}"), format!("scheme.servers={servers}"), format!("scheme.r={r}")]);
            let tag = format!("{kind}-k{servers}-r{r}-{}", extra.join("-").replace(['.', '='], ""));
            let (rc, err, rd) = run(dir, text, &sets, &tag);
            assert_eq!(rc, Some(0), "{tag}: {err}");
            let rd = rd.unwrap();
            let got = read_ranks(&rd.join("ranks.txt"));
            assert_eq!(got.len(), want.len(), "{tag}");
            for (id, w) in want {
                let g = got[id];
                assert!((g - w).abs() <= 1e-12 * w.abs(), "{tag}: vertex {id}: {g} vs {w}");
            }
            assert_eq!(iterations(&rd).len(), ITERATIONS, "{tag}");
            // the turns' barriers are part of the Shuffle's time; with every transfer at once
            // there are none, nor at r = K (no Shuffle)
            let turns = extra.contains(&"scheme.shuffle=turns") && r < servers;
            for row in phases(&rd) {
                let (shuffle, lo, hi) = (row["shuffle_s"], row["barrier_min_s"], row["barrier_max_s"]);
                if turns {
                    assert!(0.0 < lo && lo <= hi && hi <= shuffle, "{tag}: {row:?}");
                } else {
                    assert!(lo == 0.0 && hi == 0.0, "{tag}: {row:?}");
                }
            }
            // every server logs, per other server, when the last message not through it came
            // (within its iteration): none where every message passes through every server (no
            // Shuffle, or one broadcast to a group of all), or where it received nothing (every
            // message to it empty: a directed graph's K = 3); a unicast passes through its two ends
            let broadcast = kind == "coded-pagerank" && !extra.contains(&"scheme.multicast=unicasts");
            let through_all = r == servers || (broadcast && r + 1 == servers);
            let mut told = true;
            for k in 0..servers {
                // the seconds creating the groups' communicators where the coded Shuffle
                // broadcasts (at r = K there are no groups to create)
                let setup = &records(&rd, k, "setup")[0];
                let groups_s = setup["groups_s"].as_f64();
                assert_eq!(groups_s.is_some(), broadcast, "{tag}: {setup}");
                assert!(groups_s.is_none_or(|s| s >= 0.0), "{tag}: {setup}");
                for it in records(&rd, k, "iteration") {
                    let without = it["last_without"].as_array().unwrap_or_else(|| panic!("{tag}: {it}"));
                    let received = it["recv_bytes"].as_u64().unwrap() > 0;
                    assert_eq!(without.is_empty(), through_all || !received, "{tag}: {it}");
                    told &= !without.is_empty();
                    let end = it["end"].as_f64().unwrap();
                    for a in without {
                        let (s, at) = (a[0].as_u64().unwrap() as usize, a[1].as_f64().unwrap());
                        assert!(s < servers && s != k && at <= end, "{tag}: {it}");
                    }
                }
            }
            // outrun blame charges the server busiest in its turns, or with every transfer at
            // once the server without whose messages the Shuffle would have ended soonest, as
            // well as the two meetings (the rules are its unit tests'): three charges an
            // iteration, two where neither can be told, two or three where some server logged
            // nothing
            let blame = outrun(&["blame", rd.to_str().unwrap(), "--json"]);
            assert_eq!(blame.code, Some(0), "{tag}: {}", blame.stderr);
            let rows: Vec<serde_json::Value> = serde_json::from_str(&blame.stdout).unwrap();
            let charged = rows.iter().map(|b| b["last_needed"].as_u64().unwrap()).sum::<u64>() as usize;
            // the part charged for transfers is part of the waiting
            for b in &rows {
                let (link, waited) = (b["link_s"].as_f64().unwrap(), b["waited_s"].as_f64().unwrap());
                assert!(0.0 <= link && link <= waited, "{tag}: {b}");
            }
            let each = if (turns && r < servers) || (!turns && !through_all) { 3 } else { 2 };
            if turns || told || through_all {
                assert_eq!(charged, each * ITERATIONS, "{tag}: {}", blame.stdout);
            } else {
                assert!((2 * ITERATIONS..=3 * ITERATIONS).contains(&charged), "{tag}: {}", blame.stdout);
            }
            files.push(std::fs::read_to_string(rd.join("ranks.txt")).unwrap());
        }
        assert_eq!(files[0], files[1], "K = {servers}, r = {r} {extra:?}: coded and uncoded ranks differ");
        each.push(files.swap_remove(0));
    }
    each
}

#[test]
fn coded_equals_uncoded_equals_centralised_for_every_r() {
    let dir = tempdir("pagerank-every-r");
    let path = dir.join("g.txt");
    let edges = write_graph(&path, 90);
    let text = config(&format!("path = \"{}\"", path.display()), false);
    let want = pagerank(&edges, false, 0.85, ITERATIONS);
    let parallel = every_r(&dir, &text, 4, &[], &want);
    // the thesis's turn-taking Shuffle moves the same bytes one turn at a time: the same ranks
    let turns = every_r(&dir, &text, 4, &["scheme.shuffle=turns"], &want);
    assert!(parallel == turns, "K = 4: the turn-taking Shuffle's ranks differ from the parallel one's");
    // the coded messages sent to each member point to point instead of broadcast: the same ranks
    let unicasts = every_r(&dir, &text, 4, &["scheme.multicast=unicasts"], &want);
    assert!(parallel == unicasts, "K = 4: the coded unicasts' ranks differ from the broadcasts'");
    every_r(&dir, &text, 5, &["scheme.multicast=unicasts", "scheme.shuffle=turns", "scheme.reduce=mod"], &want);
    every_r(&dir, &text, 5, &["scheme.reduce=mod", "graph.permute=true"], &want);
    // directed: sinks are dangling vertices (their mass is spread uniformly)
    let text = config(&format!("path = \"{}\"", path.display()), true);
    let want = pagerank(&edges, true, 0.85, ITERATIONS);
    assert!(want.len() == 90);
    every_r(&dir, &text, 3, &[], &want);
}

/// The test's graph as a CSV with a header (`source,target,weight`), as a Matrix Market
/// coordinate file (its size line is no edge) and gzipped: the same ranks as the test's
/// reference, through mpirun.
#[test]
fn csv_and_matrix_market_edge_lists_read_as_the_same_graph() {
    let dir = tempdir("pagerank-formats");
    let snap = dir.join("g.txt");
    let edges = write_graph(&snap, 40);
    let want = pagerank(&edges, true, 0.85, ITERATIONS);
    let csv = dir.join("g.csv");
    let body: String = edges.iter().map(|(a, b)| format!("{a},{b},1.0\n")).collect();
    std::fs::write(&csv, format!("source,target,weight\n{body}")).unwrap();
    let mtx = dir.join("g.mtx");
    let body: String = edges.iter().map(|(a, b)| format!("{a} {b}\n")).collect();
    let top = edges.iter().map(|&(a, b)| a.max(b)).max().unwrap();
    std::fs::write(
        &mtx,
        format!(
            "%%MatrixMarket matrix coordinate pattern general\n% ids as given\n{top} {top} {}\n{body}",
            edges.len()
        ),
    )
    .unwrap();
    // SNAP ships its edge lists gzipped (`web-Google.txt.gz`)
    let gz = dir.join("g.txt.gz");
    let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &std::fs::read(&snap).unwrap()).unwrap();
    e.finish().unwrap();
    for (tag, path) in [("csv", csv), ("mtx", mtx), ("gz", gz)] {
        let text = config(&format!("path = \"{}\"", path.display()), true);
        let (rc, err, rd) = run(&dir, &text, &[], tag);
        assert_eq!(rc, Some(0), "{tag}: {err}");
        let got = read_ranks(&rd.unwrap().join("ranks.txt"));
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>(), "{tag}: the vertex sets differ");
        let d = got.iter().map(|(v, r)| (r - want[v]).abs()).fold(0.0, f64::max);
        assert!(d < 1e-12, "{tag}: largest difference {d:e}");
    }
}

/// T8: the bytes multicast per iteration equal the note's Cbytes for det_er(60, 0.2, 1), K = 5
/// (1952 / 915 / 310 for r = 2 / 3 / 4); uncoded sends 8 bytes per value (U = 448 / 299 / 132).
#[test]
fn measured_shuffle_bytes_equal_the_notes_counts() {
    let dir = tempdir("pagerank-bytes");
    let text = config("kind = \"det-er\"\nn = 60\np = 0.2\nseed = 1", false).replace("directed = false\n", "");
    for (r, coded, uncoded) in [(2, 1952, 448), (3, 915, 299), (4, 310, 132)] {
        for (kind, want) in [("coded-pagerank", coded), ("uncoded-pagerank", 8 * uncoded)] {
            let sets = vec![
                format!("scheme.kind={kind}"),
                "scheme.servers=5".into(),
                format!("scheme.r={r}"),
                "run.iterations=3".into(),
            ];
            let tag = format!("{kind}-{r}");
            let (rc, err, rd) = run(&dir, &text, &sets, &tag);
            assert_eq!(rc, Some(0), "{tag}: {err}");
            let rows = phases(&rd.unwrap());
            assert_eq!(rows.len(), 3);
            for row in rows {
                assert_eq!(row["l_bytes"], want as f64, "{tag}: {row:?}");
            }
        }
    }
}

#[test]
fn tolerance_stops_every_server_after_the_same_iteration() {
    let dir = tempdir("pagerank-tol");
    let text = config("kind = \"er\"\nn = 200\np = 0.05", false).replace("directed = false\n", "");
    let sets = vec!["run.iterations=500".into(), "job.tol=1e-10".into()];
    let (rc, err, rd) = run(&dir, &text, &sets, "tol");
    assert_eq!(rc, Some(0), "{err}");
    let rd = rd.unwrap();
    let rows = iterations(&rd);
    assert!(rows.len() > 5 && rows.len() < 500, "{} iterations", rows.len());
    let last: f64 = rows.last().unwrap()["normalized_error"].parse().unwrap();
    let before: f64 = rows[rows.len() - 2]["normalized_error"].parse().unwrap();
    assert!(last <= 1e-10 && before > 1e-10, "{before} then {last}");
    // outrun report reads a PageRank run (no loss: null in the summary)
    let rep = outrun(&["report", rd.to_str().unwrap()]);
    assert_eq!(rep.code, Some(0), "{}", rep.stderr);
    assert!(rep.stdout.contains("PageRank, er graph, n = 200"), "{}", rep.stdout);
    // every server logged the same number of iterations
    for k in 0..4 {
        assert_eq!(records(&rd, k, "iteration").len(), rows.len(), "rank {k}");
    }
    // outrun blame names the servers the others waited for at the iterations' two meetings and
    // for the slowest transfers (the rules are the unit tests'): every server, the waiting
    // shared out, three charges an iteration
    let blame = outrun(&["blame", rd.to_str().unwrap(), "--json"]);
    assert_eq!(blame.code, Some(0), "{}", blame.stderr);
    let servers: Vec<serde_json::Value> = serde_json::from_str(&blame.stdout).unwrap();
    let mut ids: Vec<u64> = servers.iter().map(|b| b["worker"].as_u64().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2, 3], "{}", blame.stdout);
    assert!(servers.iter().all(|b| b["worker"] == b["rank"] && b["server"] == true), "{}", blame.stdout);
    let score: f64 = servers.iter().map(|b| b["score"].as_f64().unwrap()).sum();
    assert!((score - 1.0).abs() < 1e-9, "{}", blame.stdout);
    let charged: u64 = servers.iter().map(|b| b["last_needed"].as_u64().unwrap()).sum();
    assert_eq!(charged, 3 * rows.len() as u64, "{}", blame.stdout);
    // outrun fit has no compute times with a load to fit, and says why in one line
    let fit = outrun(&["fit", rd.to_str().unwrap()]);
    assert_eq!(fit.code, Some(2), "{}", fit.stderr);
    assert!(fit.stderr.contains("a PageRank run: its servers log their phases' times"), "{}", fit.stderr);
    assert_eq!(fit.stderr.trim().lines().count(), 1, "{}", fit.stderr);
}

#[test]
fn bad_graph_files_fail_with_one_line_on_every_rank() {
    let dir = tempdir("pagerank-bad");
    for (name, body, want) in [
        ("nonnum.txt", "1 2\n2 x3\n", ":2: the second vertex id `x3`"),
        ("onecol.txt", "1 2\n\n7\n", ":3: one column"),
        ("empty.txt", "", ": no edges"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        let text = config(&format!("path = \"{}\"", path.display()), false);
        // before MPI: outrun check
        let cfg = write_config(&dir, &text);
        let c = outrun(&["check", cfg.to_str().unwrap()]);
        assert_eq!(c.code, Some(2), "{name}: {}", c.stderr);
        assert!(c.stderr.contains(want) && c.stderr.lines().count() == 1, "{name}: {}", c.stderr);
        // and through mpirun straight away (no launcher): every rank exits, one line
        let (rc, err, _) = run(&dir, &text, &[], &format!("bad-{name}"));
        assert_ne!(rc, Some(0));
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{name}: {err}");
        assert!(lines[0].contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A server slowed by `[stragglers]` (a trace of 0.2 s after each Map for server 2, the
/// model's worker 3) holds up every other at the Shuffle: the ranks stay exact, its iterations
/// log the seconds added, and `outrun blame` charges it at the Shuffle's meeting every
/// iteration, for its computation rather than its link.
#[test]
fn a_straggling_server_is_charged_and_the_ranks_stay_exact() {
    let dir = tempdir("pagerank-straggler");
    let path = dir.join("g.txt");
    let edges = write_graph(&path, 90);
    let want = pagerank(&edges, false, 0.85, ITERATIONS);
    let trace = dir.join("trace.csv");
    // every worker each iteration: 0.2 s for worker 3 (server 2), none for the others
    let lines: String = (0..ITERATIONS)
        .flat_map(|t| (1..=4).map(move |w| format!("{w},{t},{}\n", if w == 3 { 0.2 } else { 0.0 })))
        .collect();
    std::fs::write(&trace, lines).unwrap();
    let text = format!(
        "{}\n[stragglers]\nmodel = \"trace\"\ntimes = \"delay\"\nfile = \"{}\"\n",
        config(&format!("path = \"{}\"", path.display()), false),
        trace.display()
    );
    for kind in ["coded-pagerank", "uncoded-pagerank"] {
        let tag = format!("straggler-{kind}");
        let (rc, err, rd) = run(&dir, &text, &[format!("scheme.kind={kind}")], &tag);
        assert_eq!(rc, Some(0), "{tag}: {err}");
        let rd = rd.unwrap();
        let got = read_ranks(&rd.join("ranks.txt"));
        for (id, w) in &want {
            assert!((got[id] - w).abs() <= 1e-12 * w.abs(), "{tag}: vertex {id}");
        }
        for k in 0..4 {
            let its = records(&rd, k, "iteration");
            assert_eq!(its.len(), ITERATIONS, "{tag}");
            for it in its {
                let (injected, map) = (it["injected_s"].as_f64().unwrap(), it["map_s"].as_f64().unwrap());
                let added = if k == 2 { 0.2 } else { 0.0 };
                assert_eq!(injected, added, "{tag}: rank {k}: {it}");
                assert!(map >= added, "{tag}: rank {k}: {it}");
            }
        }
        let blame = outrun(&["blame", rd.to_str().unwrap(), "--json"]);
        assert_eq!(blame.code, Some(0), "{tag}: {}", blame.stderr);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&blame.stdout).unwrap();
        let slow = rows.iter().find(|b| b["rank"] == 2).unwrap_or_else(|| panic!("{tag}: {}", blame.stdout));
        // charged at the Shuffle's meeting every iteration (it came about 0.2 s after the
        // others), first in the table, and not again for its messages
        assert_eq!(rows[0]["rank"], 2, "{tag}: {}", blame.stdout);
        assert_eq!(slow["straggled"], ITERATIONS, "{tag}: {slow}");
        assert!(slow["last_needed"].as_u64().unwrap() >= ITERATIONS as u64, "{tag}: {slow}");
        let (waited, link) = (slow["waited_s"].as_f64().unwrap(), slow["link_s"].as_f64().unwrap());
        assert!(waited >= 0.15 * ITERATIONS as f64, "{tag}: {slow}");
        assert!(link <= 0.05 * ITERATIONS as f64, "{tag}: {slow}");
        // the table names servers, and which [stragglers] worker each is
        let table = outrun(&["blame", rd.to_str().unwrap()]);
        assert!(table.stdout.contains("| server | rank |"), "{tag}: {}", table.stdout);
        assert!(table.stdout.contains("| 2 | 2 |"), "{tag}: {}", table.stdout);
        assert!(table.stdout.contains("server k is the straggler model's worker k + 1"), "{tag}: {}", table.stdout);
    }
}
