//! The node machines driven by scripted events: no MPI, no clock. The test kit's harness
//! (`outrun_testkit::Scripted`) routes each node's outputs; every test chooses the order in which
//! messages, computations and timers happen, and checks what the machines did.

use outrun_plan::Plan;
use outrun_proto::*;
use outrun_testkit::{Cfg, Scripted};
use std::sync::Arc;

use serde_json::json;

type V = Vec<f64>;
type Net = Scripted;

fn plan(extra: &[&str]) -> Plan {
    Cfg::linear("t", 120, 3, 3).set("run.deadline", 10.0).with(extra).plan()
}

const LEN: usize = 4;

/// Part of worker `i` (1-based) as a GC code would have it: Σ_κ B[i,κ]·g_κ with g_κ = (κ+1)·(1, 2, 3, 4).
fn coded_part(plan: &Plan, i: usize) -> V {
    let b = &plan.codes[0].gradient().b;
    (0..LEN).map(|j| (0..b.ncols()).map(|k| b[(i - 1, k)] * (k + 1) as f64 * (j + 1) as f64).sum()).collect()
}

fn full_sum(n: usize) -> V {
    let s: f64 = (1..=n).map(|k| k as f64).sum();
    (0..LEN).map(|j| s * (j + 1) as f64).collect()
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

#[test]
fn star_decodes_from_the_first_n_minus_s_and_discards_the_late_one() {
    let p = plan(&["scheme.kind=gc-cyclic", "scheme.s=1"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![0.5; LEN]);
    net.flush(|_, _, _| false);
    assert_eq!(net.computes.len(), 3, "every worker computes");
    net.compute(2, 0, coded_part(&p, 2));
    net.compute(3, 0, coded_part(&p, 3));
    net.flush(|_, _, _| false);
    let (_, t, total, info) = &net.delivered[0];
    assert_eq!(*t, 0);
    assert!(close(total, &full_sum(3)), "{total:?}");
    assert_eq!(info.used, vec![2, 3]);
    assert!(info.exact && info.residual < 1e-9);
    // worker 1 was slow: its result for 0 arrives while iteration 1 is collected → late
    net.start(1, vec![0.25; LEN]);
    net.compute(1, 0, coded_part(&p, 1));
    net.flush(|_, _, _| false);
    assert_eq!(net.late(0), 1);
    let late = net.logs[0].iter().find(|e| e["ev"] == "late").unwrap();
    assert_eq!((late["t"].as_u64(), late["msg_t"].as_u64(), late["child"].as_u64()), (Some(1), Some(0), Some(1)));
    for w in 1..=3 {
        net.compute(w, 1, coded_part(&p, w));
    }
    net.flush(|_, _, _| false);
    assert_eq!(net.delivered.len(), 2);
    assert_eq!(net.late(0), 2, "the third result of iteration 1 is beyond the rule: late too");
    net.finish(None);
    for r in 0..4 {
        let o = net.done[r].as_ref().unwrap_or_else(|| panic!("rank {r} not done"));
        assert!(o.result.is_ok() && o.clean, "rank {r}: {o:?}");
    }
    assert_eq!(net.done[0].as_ref().unwrap().late, 2);
    assert_eq!(net.done[0].as_ref().unwrap().latency.count(), 6, "two models at three workers");
}

#[test]
fn a_deadline_rule_delivers_what_arrived_when_its_timer_fires() {
    // ignore with s = 0 would wait for all three; the deadline (0.5 s) takes what came
    let p = plan(&["scheme.kind=ignore", "scheme.wait_s=0.5"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![0.5; LEN]);
    net.flush(|_, _, _| false);
    net.compute(1, 0, vec![1.0; LEN]);
    net.compute(3, 0, vec![3.0; LEN]);
    net.flush(|_, _, _| false);
    assert!(net.delivered.is_empty(), "two of three, before the deadline: still waiting");
    net.fire_timers(0, 0.4);
    assert!(net.delivered.is_empty(), "a timer not yet due fires nothing");
    net.fire_timers(0, 0.5);
    let (_, t, total, info) = &net.delivered[0];
    assert_eq!((*t, info.used.clone()), (0, vec![1, 3]));
    // rescaled by d / (points covered) = 120 / 80
    assert!(close(total, &[6.0; LEN]), "{total:?}");
    assert!(!info.exact);
    // the third result comes late and is drained
    net.start(1, vec![0.25; LEN]);
    net.compute(2, 0, vec![2.0; LEN]);
    net.flush(|_, _, _| false);
    assert_eq!(net.late(0), 1);
    // iteration 1: no result by the deadline, so the first one to arrive meets the rule
    net.fire_timers(0, 2.0);
    assert_eq!(net.delivered.len(), 1);
    net.compute(2, 1, vec![2.0; LEN]);
    net.flush(|_, _, _| false);
    let (_, t, total, info) = &net.delivered[1];
    assert_eq!((*t, info.used.clone()), (1, vec![2]));
    assert!(close(total, &[6.0; LEN]), "{total:?}");
}

#[test]
fn a_worker_superseded_by_a_newer_model_abandons_and_answers_once() {
    let p = plan(&["scheme.kind=ignore", "scheme.s=1"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    net.compute(1, 0, vec![1.0; LEN]);
    net.compute(2, 0, vec![2.0; LEN]);
    net.flush(|_, _, _| false);
    assert_eq!(net.delivered.len(), 1);
    let info = &net.delivered[0].3;
    assert!(!info.exact, "ignore-stragglers with a missing worker is an estimate");
    assert!((info.coverage - 80.0 / 120.0).abs() < 1e-12);
    // rescaled by d / covered = 120 / 80
    assert!(close(&net.delivered[0].2, &[4.5; LEN]));
    net.start(1, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    // worker 3 never finished iteration 0: on model 1 it abandons 0 and starts 1
    let abandoned = net.logs[3].iter().filter(|e| e["status"] == "abandoned").count();
    assert_eq!(abandoned, 1);
    assert!(net.computes.contains(&(3, 1)));
    assert!(net.late(0) >= 1, "the abandonment is counted at the master as a late message");
    net.compute(3, 0, vec![9.0; LEN]); // stale computation: ignored
    assert!(net.wire.iter().all(|(f, _, m)| !(*f == 3 && m.head.kind == Kind::Result && m.head.t == 0)));
    net.finish(None);
    assert!(net.done.iter().all(|d| d.as_ref().is_some_and(|o| o.clean)));
}

#[test]
fn dead_workers_beyond_tolerance_fail_the_run_at_the_deadline_naming_them() {
    let p = plan(&["scheme.kind=gc-cyclic", "scheme.s=1", "stragglers.model=fail-stop", "stragglers.workers=[1, 3]"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    assert_eq!(net.computes, vec![(2, 0)], "dead workers do not compute");
    net.compute(2, 0, coded_part(&p, 2));
    net.flush(|_, _, _| false);
    assert!(net.delivered.is_empty());
    net.fire_timers(0, 10.0);
    net.flush(|_, _, _| false);
    let o = net.done[0].as_ref().expect("the master gave up");
    let Err(Failure::Iteration { iteration: 0, missing, message: msg }) = &o.result else { panic!("{o:?}") };
    assert_eq!(missing, &[1, 3]);
    assert_eq!(msg, "iteration 0: gc-cyclic needs 2 of 3 results at the master but only 1 arrived within run.deadline = 10 s; missing: workers 1, 3");
    for w in 1..=3 {
        assert!(matches!(net.done[w].as_ref().unwrap().result, Err(Failure::Aborted)), "worker {w}");
    }
}

#[test]
fn failed_subtrees_are_reported_up_and_named_by_the_master() {
    // (3, 2) tree, s = 1 per parent: leaves 5, 6 (under parent 1) and 8, 9 (under parent 2) dead
    let p = plan(&[
        "scheme.kind=cr",
        "scheme.workers=",
        "scheme.n=3",
        "scheme.layers=2",
        "scheme.s=1",
        "stragglers.model=fail-stop",
        "stragglers.workers=[5, 6, 8, 9]",
    ]);
    let mut net = Scripted::new(&p, LEN);
    net.run_iteration(0);
    // parents 1 and 2 wait (budget 2/3 of the deadline), then report their subtrees failed
    net.fire_timers(1, 6.67);
    net.fire_timers(2, 6.67);
    net.flush(|_, _, _| false);
    let o = net.done[0].as_ref().expect("hopeless: the master fails without waiting for its deadline");
    let Err(Failure::Iteration { iteration: 0, missing, message: msg }) = &o.result else { panic!("{o:?}") };
    assert_eq!(missing, &[1, 2], "the master names its children whose subtrees failed");
    assert!(
        msg.starts_with("iteration 0: cr needs 2 of 3 results at the master but 2 children reported failed subtrees"),
        "{msg}"
    );
    assert!(
        msg.contains("1 (its subtree failed: rank 1 is missing children 5, 6)")
            && msg.contains("2 (its subtree failed: rank 2 is missing children 8, 9)"),
        "{msg}"
    );
    assert!(net.done.iter().all(Option::is_some), "every node finished");
}

#[test]
fn shutdown_waits_for_every_message_a_child_sent() {
    let p = plan(&[]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    for w in 1..=3 {
        net.compute(w, 0, vec![w as f64; LEN]);
    }
    // worker 3's result is still on the wire when the master finishes
    net.flush(|f, _, h| f == 3 && h.kind == Kind::Result);
    net.flush(|_, _, _| false);
    assert_eq!(net.delivered.len(), 1);
    net.start(1, vec![1.0; LEN]);
    for w in 1..=2 {
        net.deliver(|f, t, h| f == 0 && t == w && h.kind == Kind::Model);
        net.compute(w, 1, vec![1.0; LEN]);
    }
    // hold worker 2's result back; the stop overtakes nothing (one tag per direction)
    net.input(0, Input::Finish { failure: None });
    net.flush(|f, _, h| f == 2 && h.kind == Kind::Result);
    assert!(net.done[0].is_none(), "the master must drain worker 2's result before finishing");
    net.flush(|_, _, _| false);
    let o = net.done[0].as_ref().unwrap();
    assert!(o.clean && o.result.is_ok());
    assert!(o.late >= 1);
}

/// A child whose goodbye never comes (alive but silent: stopped, stuck) ends the node unclean
/// after the grace, naming it with the last iteration it answered; a run whose iterations all
/// completed keeps its success (its results stand).
#[test]
fn a_grace_timeout_finishes_unclean() {
    // worker 1's goodbye is lost
    let mut net2 = Scripted::new(&plan(&[]), LEN);
    net2.start(0, vec![1.0; LEN]);
    net2.flush(|_, _, _| false);
    net2.input(0, Input::Finish { failure: None });
    net2.flush(|f, _, h| f == 1 && h.kind == Kind::Bye);
    net2.wire.retain(|(f, _, h)| !(*f == 1 && h.head.kind == Kind::Bye));
    assert!(net2.done[0].is_none());
    net2.fire_timers(0, 100.0);
    let o = net2.done[0].as_ref().unwrap();
    assert!(!o.clean && o.result.is_ok(), "{o:?}");
    assert_eq!(o.silent, vec![(1, Some(0))], "worker 1 answered iteration 0, then nothing");
    let warned = net2.logs[0].iter().any(|e| {
        e["ev"] == "warn" && e["message"].as_str().is_some_and(|m| m.contains("children 1 did not say goodbye"))
    });
    assert!(warned, "{:?}", net2.logs[0]);
}

#[test]
fn a_worker_whose_parent_goes_silent_gives_up() {
    let mut net = Scripted::new(&plan(&[]), LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    net.fire_timers(1, 1e4);
    let o = net.done[1].as_ref().expect("worker 1 gave up");
    assert!(
        matches!(&o.result, Err(Failure::Silent { rank: 1, message, .. }) if message.contains("no message from its parent rank 0")),
        "{o:?}"
    );
    assert!(!o.clean);
}

/// A silent root is named by one of its children: the first gives up at its patience, the
/// others a shutdown grace later (by then the first has ended the job). In a star, and in the
/// hierarchical pattern, where the clients below the helpers wait a grace more too.
#[test]
fn a_silent_root_is_named_by_its_first_child_first() {
    let grace = outrun_plan::budget::shutdown_grace(10.0);
    for (p, layers) in [(plan(&[]), 1), (hier_plan("arc"), 2)] {
        let silence = outrun_plan::budget::parent_silence(10.0, layers);
        let mut net = Scripted::new(&p, LEN);
        net.start(0, vec![1.0; LEN]);
        net.flush(|_, _, _| false);
        let others: Vec<usize> = (2..p.ranks).collect();
        for r in 1..p.ranks {
            net.fire_timers(r, silence + 0.5);
        }
        let said = |o: &Outcome| matches!(&o.result, Err(Failure::Silent { rank: 1, message, .. }) if message.contains("rank 1: no message from"));
        assert!(net.done[1].as_ref().is_some_and(said), "rank 1 gives up at its patience: {:?}", net.done[1]);
        assert!(others.iter().all(|&r| net.done[r].is_none()), "the others wait a grace more");
        for &r in &others {
            net.fire_timers(r, silence + grace + 0.5);
            assert!(net.done[r].is_some(), "rank {r} gives up after its grace");
        }
    }
}

/// Rank 2 of a (3, 2) CodedReduce tree stops (alive but silent) after iteration 0: the root
/// decodes without its subtree (s = 1), and its children, whose parent sends nothing, ask the
/// root whether the run goes on instead of ending it; they wait on while it answers (one
/// warning), and give up only when the root, too, is silent.
#[test]
fn a_node_under_a_silent_parent_asks_the_root_and_waits_while_it_answers() {
    let p = plan(&["scheme.kind=cr", "scheme.workers=", "scheme.n=3", "scheme.layers=2", "scheme.s=1"]);
    let silence = outrun_plan::budget::parent_silence(10.0, 2);
    let orphans = p.nodes[2].children.clone();
    assert_eq!(orphans.len(), 3);
    let mut net = Scripted::new(&p, LEN);
    net.run_iteration(0);
    // rank 2 is stopped: nothing reaches it, it sends nothing, it computes nothing
    let cut = |f: usize, t: usize, _: &Header| f == 2 || t == 2;
    let mut t = 1;
    let step = |net: &mut Net, t: u64| {
        net.start(t, vec![1.0; LEN]);
        net.flush(cut);
        let computes: Vec<(usize, u64)> = net.computes.iter().copied().filter(|c| c.0 != 2).collect();
        for (r, t) in computes {
            net.compute(r, t, vec![1.0; LEN]);
        }
        net.flush(cut);
    };
    // the run outlasts three of the orphans' patiences
    for k in 1..=3 {
        let until = k as f64 * silence + 1.0;
        while net.now < until - 1.5 {
            step(&mut net, t);
            t += 1;
            net.now += 1.0;
        }
        for &o in &orphans {
            net.fire_timers(o, until);
        }
        assert_eq!(
            orphans.iter().map(|&o| on_wire(&net, o, Kind::Probe)).sum::<usize>(),
            orphans.len(),
            "each orphan asks the root once"
        );
        net.flush(cut);
        for &o in &orphans {
            assert!(net.done[o].is_none(), "orphan {o} waits on while the root answers: {:?}", net.done[o]);
        }
    }
    assert_eq!(net.delivered.len() as u64, t, "the root delivered every iteration without rank 2's subtree");
    assert!(net.delivered.iter().all(|d| d.3.exact));
    for &o in &orphans {
        let warned: Vec<&serde_json::Value> = net.logs[o].iter().filter(|e| e["ev"] == "warn").collect();
        assert_eq!(warned.len(), 1, "orphan {o} warns once: {warned:?}");
        let m = warned[0]["message"].as_str().unwrap();
        assert!(m.contains("no message from its parent rank 2") && m.contains("but the root (rank 0) answers"), "{m}");
    }
    // now the root is silent too: the next probe goes unanswered, and an orphan gives up
    let o = orphans[0];
    net.fire_timers(o, 4.0 * silence + 1.0);
    net.wire.retain(|(f, _, m)| !(*f == o && m.head.kind == Kind::Probe));
    net.fire_timers(o, 5.0 * silence + 1.0);
    let out = net.done[o].as_ref().expect("the orphan gave up");
    assert!(
        matches!(&out.result, Err(Failure::Silent { message, .. }) if message.contains("no message from its parent rank 2") && message.contains("nor an answer from the root (rank 0)")),
        "{out:?}"
    );
}

#[test]
fn ring_ranks_all_deliver_the_sum_even_when_a_neighbour_runs_ahead() {
    let p = plan(&["scheme.kind=rar", "scheme.s="]);
    let n = p.ranks;
    let mut net = Scripted::new(&p, LEN);
    for t in 0..2u64 {
        for r in 0..n {
            net.input(r, Input::Start { t, model: Arc::new(vec![0.0; LEN]) });
        }
        // rank 2 computes first and sends before the others have even computed
        for r in [2, 0, 1] {
            net.compute(r, t, vec![(r + 1) as f64, 10.0 * (r + 1) as f64, 0.5, t as f64]);
            net.flush(|_, _, _| false);
        }
    }
    assert_eq!(net.delivered.len(), 2 * n);
    for (_, t, total, _) in &net.delivered {
        assert_eq!(total, &vec![6.0, 60.0, 1.5, 3.0 * *t as f64]);
    }
}

/// Dropped logs travel with the goodbyes: a leaf under a parent and the parent itself report
/// their log failures, and the master's outcome names both (it prints one line for the run).
#[test]
fn dropped_logs_reach_the_master_with_the_goodbyes() {
    let p = plan(&["scheme.kind=cr", "scheme.workers=", "scheme.n=3", "scheme.layers=2", "scheme.s=1"]);
    let mut net = Scripted::new(&p, LEN);
    net.run_iteration(0);
    assert_eq!(net.delivered.len(), 1);
    net.input(7, Input::LogDropped { error: "No space left on device".into() });
    net.input(2, Input::LogDropped { error: "No space left on device".into() });
    net.input(2, Input::LogDropped { error: "again".into() });
    net.finish(None);
    let o = net.done[0].as_ref().expect("the master finished");
    assert!(o.clean && o.result.is_ok(), "{o:?}");
    let mut ranks: Vec<u32> = o.dropped.iter().map(|(r, _)| *r).collect();
    ranks.sort();
    assert_eq!(ranks, vec![2, 7], "each rank once: {:?}", o.dropped);
    assert!(o.dropped.iter().all(|(_, e)| e == "No space left on device"));
}

/// Messages of `kind` on the wire from `from` (any destination).
fn on_wire(net: &Net, from: usize, kind: Kind) -> usize {
    net.wire.iter().filter(|(f, _, m)| *f == from && m.head.kind == kind).count()
}

#[test]
fn granted_uploads_cross_only_for_the_results_the_rule_uses() {
    let p = plan(&["scheme.kind=gc-cyclic", "scheme.s=1", "engine.upload=granted"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![0.5; LEN]);
    net.flush(|_, _, _| false);
    // workers 3 and 2 finish first: each announces, and is granted at once
    net.compute(3, 0, coded_part(&p, 3));
    assert_eq!((on_wire(&net, 3, Kind::Ready), on_wire(&net, 3, Kind::Result)), (1, 0), "a notice, not the result");
    net.deliver(|f, _, h| f == 3 && h.kind == Kind::Ready);
    assert_eq!(on_wire(&net, 0, Kind::Grant), 1);
    net.compute(2, 0, coded_part(&p, 2));
    net.deliver(|f, _, h| f == 2 && h.kind == Kind::Ready);
    // two grants meet the rule (any 2 of 3): worker 1 is refused before it announces
    assert_eq!(on_wire(&net, 0, Kind::Grant), 2);
    assert!(net.wire.iter().any(|(f, t, m)| *f == 0 && *t == 1 && m.head.kind == Kind::Refuse));
    net.flush(|_, _, _| false);
    let (_, t, total, info) = &net.delivered[0];
    assert_eq!((*t, info.used.clone()), (0, vec![3, 2]));
    assert!(close(total, &full_sum(3)) && info.exact, "{total:?}");
    // the slow worker finishes: it says nothing, and its record says why
    net.compute(1, 0, coded_part(&p, 1));
    assert!(
        net.wire.is_empty(),
        "a refused worker sends nothing: {:?}",
        net.wire.iter().map(|w| w.2.head.kind).collect::<Vec<_>>()
    );
    assert!(net.logs[1].iter().any(|e| e["t"] == 0 && e["status"] == "refused"));
    let rec = net.logs[0].iter().find(|e| e["ev"] == "iter" && e["t"] == 0).unwrap();
    let result = wire::frame_bytes(&Header::new(Kind::Result, 0), LEN) as u64;
    let notice = wire::frame_bytes(&Header::new(Kind::Ready, 0), 0) as u64;
    assert_eq!(
        (rec["notices"].as_u64(), rec["grants"].as_u64(), rec["refusals"].as_u64()),
        (Some(2), Some(2), Some(1))
    );
    assert_eq!(rec["result_bytes"].as_u64(), Some(2 * result));
    assert_eq!(rec["recv_bytes"].as_u64(), Some(2 * result + 2 * notice));
    // next iteration: nothing late, nothing abandoned
    net.run_iteration(1);
    assert_eq!(net.delivered.len(), 2);
    net.finish(None);
    assert_eq!(net.late(0), 0);
    let o = net.done[0].as_ref().unwrap();
    assert!(o.result.is_ok() && o.clean && o.late == 0, "{o:?}");
    let down = net.logs[0].iter().find(|e| e["ev"] == "shutdown").unwrap();
    assert_eq!(down["late_result_bytes"], 0);
    assert_eq!(down["upload"]["grants"], 4, "2 per iteration: {down}");
}

#[test]
fn a_notice_that_crosses_its_refusal_gets_no_second_answer() {
    let p = plan(&["scheme.kind=ignore", "scheme.s=1", "engine.upload=granted"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    for w in 1..=3 {
        net.compute(w, 0, vec![w as f64; LEN]);
    }
    // the master reads the notices of 1 and 2 (granted; 3 refused unseen), then 3's
    net.deliver(|f, _, h| f == 1 && h.kind == Kind::Ready);
    net.deliver(|f, _, h| f == 2 && h.kind == Kind::Ready);
    net.deliver(|f, _, h| f == 3 && h.kind == Kind::Ready);
    assert_eq!(
        net.wire.iter().filter(|(_, t, m)| *t == 3 && m.head.kind == Kind::Refuse).count(),
        1,
        "one refusal for worker 3"
    );
    net.flush(|_, _, _| false);
    assert!(close(&net.delivered[0].2, &[3.0 * 120.0 / 80.0; LEN]), "{:?}", net.delivered[0].2);
    assert!(net.logs[3].iter().any(|e| e["t"] == 0 && e["status"] == "refused"));
    net.finish(None);
    assert!(net.done.iter().all(|d| d.as_ref().is_some_and(|o| o.clean && o.result.is_ok())));
}

#[test]
fn a_granted_child_that_never_uploads_is_replaced_by_a_refused_one() {
    let p = plan(&["scheme.kind=gc-cyclic", "scheme.s=1", "engine.upload=granted"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    for w in 1..=3 {
        net.compute(w, 0, coded_part(&p, w));
    }
    for w in 1..=3 {
        net.deliver(|f, _, h| f == w && h.kind == Kind::Ready);
    }
    // worker 2 is granted, then dies: its grant is lost (so is its upload)
    assert!(net.deliver(|_, t, h| t == 1 && h.kind == Kind::Grant));
    net.wire.retain(|(_, t, m)| !(*t == 2 && m.head.kind == Kind::Grant));
    net.flush(|_, _, _| false);
    assert!(net.delivered.is_empty(), "one of two granted results is missing");
    // half the wait budget: worker 2 is given up on, worker 3 (refused, holding) granted
    net.fire_timers(0, 5.0);
    let ev = net.logs[0].iter().find(|e| e["ev"] == "regrant").expect("a regrant record");
    assert_eq!((ev["gave_up"].clone(), ev["granted"].clone()), (json!([2]), json!([3])));
    net.flush(|_, _, _| false);
    let (_, _, total, info) = &net.delivered[0];
    assert_eq!(info.used, vec![1, 3]);
    assert!(close(total, &full_sum(3)) && info.exact);
    assert!(net.logs[3].iter().any(|e| e["ev"] == "regranted"), "worker 3 uploads after its refusal");
}

#[test]
fn adaptive_codes_are_granted_one_round_at_a_time() {
    let p = plan(&["scheme.kind=agc", "scheme.s=", "scheme.d=2", "scheme.rounds=3", "engine.upload=granted"]);
    let mut net = Scripted::new(&p, LEN);
    net.start(0, vec![1.0; LEN]);
    net.flush(|_, _, _| false);
    let computes = std::mem::take(&mut net.computes);
    for (r, t) in computes {
        // every part of worker r: ones
        let parts = vec![vec![1.0; LEN]; p.nodes[r].parts.len()];
        net.input(r, Input::Computed { t, parts, ready: 0.0 });
    }
    // every notice announces all the rounds, but a grant names one
    assert!(net.wire.iter().filter(|w| w.2.head.kind == Kind::Ready).all(|w| w.2.head.round == 3));
    while net.deliver(|_, _, h| h.kind == Kind::Ready) {}
    assert!(net.wire.iter().filter(|w| w.2.head.kind == Kind::Grant).all(|w| w.2.head.round == 0));
    net.flush(|_, _, _| false);
    assert_eq!(net.delivered.len(), 1);
    let rec = net.logs[0].iter().find(|e| e["ev"] == "iter" && e["t"] == 0).unwrap();
    let rounds_granted = rec["grants"].as_u64().unwrap();
    assert!(rounds_granted > 3, "some worker was granted more than its first round");
    net.finish(None);
    assert_eq!(net.late(0), 0);
    // the workers' records close at the stop: what they uploaded is what was granted
    let uploads: u64 = (1..=3)
        .flat_map(|w| net.logs[w].iter().filter(|e| e["ev"] == "iter").filter_map(|e| e["rounds"].as_u64()))
        .sum();
    assert_eq!(rounds_granted, uploads, "every granted round was uploaded, no other");
}

/// A hierarchical plan: 3 clients (ranks 5..7) reach the master through 4 helpers (ranks 1..4);
/// each client loses one helper link per iteration.
fn hier_plan(kind: &str) -> Plan {
    plan(&[
        &format!("scheme.kind={kind}"),
        "scheme.workers=",
        "scheme.clients=3",
        "scheme.helpers=4",
        "scheme.s=1",
        "links.model=fail",
        "links.per_client=1",
    ])
}

#[test]
fn hierarchical_nodes_sum_the_clients_through_failing_links() {
    for kind in ["arc", "amc", "hier-uncoded"] {
        let plan = hier_plan(kind);
        let mut net = Scripted::new(&plan.clone(), LEN);
        for t in 0..3u64 {
            net.start(t, vec![0.5; LEN]);
            net.flush(|_, _, _| false);
            assert_eq!(net.computes.len(), 3, "{kind}: every client computes");
            for c in 0..3usize {
                let g: V = (0..LEN).map(|j| (c * 10 + j) as f64 + 0.25 * t as f64).collect();
                net.compute(5 + c, t, g);
            }
            net.flush(|_, _, _| false);
            let (_, dt, total, info) = net.delivered.last().cloned().expect("delivered");
            assert_eq!(dt, t);
            let want: V = (0..LEN).map(|j| (0..3).map(|c| (c * 10 + j) as f64 + 0.25 * t as f64).sum()).collect();
            assert!(total.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12), "{kind} t = {t}: {total:?}");
            assert!(info.exact && info.used == vec![1, 2, 3]);
            // the master's record: the link model's failures, one per client
            let rec = net.logs[0].iter().rev().find(|e| e["ev"] == "iter").unwrap();
            let failed: Vec<Vec<usize>> = serde_json::from_value(rec["hier"]["failed"].clone()).unwrap();
            for (c, f) in failed.iter().enumerate() {
                let drawn: Vec<usize> = plan.links.failed_helpers(c + 1, 4, t).iter().map(|h| h + 1).collect();
                assert_eq!(f, &drawn);
            }
        }
        // a copy of an old slice reaching a helper is discarded as late
        let old = Msg { head: Header::new(Kind::Result, 0), body: Some(Arc::new(vec![9.0; LEN])) };
        net.input(1, Input::Recv { from: 5, msg: old });
        net.finish(None);
        for r in 0..plan.ranks {
            let o = net.done[r].as_ref().unwrap_or_else(|| panic!("{kind}: rank {r} not done"));
            assert!(o.clean && o.result.is_ok(), "{kind}: rank {r}: {o:?}");
        }
        assert_eq!(net.done[1].as_ref().unwrap().late, 1, "{kind}");
    }
}

#[test]
fn a_hierarchical_master_names_a_client_no_helper_heard_from() {
    let plan = hier_plan("arc");
    let mut net = Scripted::new(&plan, LEN);
    net.start(0, vec![0.5; LEN]);
    net.flush(|_, _, _| false);
    // clients 1 and 2 answer, client 3 (rank 7) never does: at half the deadline every helper
    // reports it failed, one failure more than scheme.s = 1 tolerates
    for c in 0..2 {
        net.compute(5 + c, 0, vec![1.0; LEN]);
    }
    net.flush(|_, _, _| false);
    for h in 1..=4 {
        net.fire_timers(h, 5.0);
    }
    net.flush(|_, _, _| false);
    for r in 0..=7 {
        net.fire_timers(r, 100.0);
        net.flush(|_, _, _| false);
    }
    let master = net.done[0].as_ref().expect("the master ended");
    let why = format!("{:?}", master.result);
    let drawn = plan.links.failed_helpers(3, 4, 0);
    let silent: Vec<String> = (0..4).filter(|h| !drawn.contains(h)).map(|h| (h + 1).to_string()).collect();
    assert!(
        why.contains(&format!(
            "iteration 0: no slice of client 3 (rank 7) reached helpers {} within their wait of 5 s",
            silent.join(", ")
        )),
        "{why}"
    );
    assert!(why.contains("missing: [7]"), "{why}");
    assert!(net.done.iter().all(Option::is_some), "every rank ended");
}

#[test]
fn a_hierarchical_helper_counts_a_slow_link_as_failed_within_scheme_s() {
    // no drawn link failures, s = 1: client 3's slice to helper 1 is held past helper 1's wait,
    // which reports that link failed; ARC tolerates one per client and the sum is exact
    let plan = plan(&["scheme.kind=arc", "scheme.workers=", "scheme.clients=3", "scheme.helpers=4", "scheme.s=1"]);
    let mut net = Scripted::new(&plan, LEN);
    net.start(0, vec![0.5; LEN]);
    net.flush(|_, _, _| false);
    for c in 0..3 {
        net.compute(5 + c, 0, vec![c as f64 + 1.0; LEN]);
    }
    let slow = |f: usize, t: usize, _: &Header| f == 7 && t == 1;
    net.flush(slow);
    assert!(net.delivered.is_empty(), "helper 1 waits for client 3");
    net.fire_timers(1, 5.0);
    net.flush(slow);
    let (_, t, total, _) = net.delivered.last().cloned().unwrap_or_else(|| panic!("{:?}", net.logs[0]));
    assert_eq!(t, 0);
    assert!(total.iter().all(|v| (v - 6.0).abs() < 1e-12), "{total:?}");
    let rec = net.logs[0].iter().rev().find(|e| e["ev"] == "iter").unwrap();
    assert_eq!(rec["hier"]["failed"], serde_json::json!([[], [], [1]]));
    let helper = &net.logs[1];
    let said = |m: &serde_json::Value| {
        m.as_str().is_some_and(|m| m.contains("no slice from ranks 7 within the helper's wait of 5 s"))
    };
    assert!(helper.iter().any(|e| said(&e["message"])), "{helper:?}");
    // the held slice, when it comes, is late
    net.flush(|_, _, _| false);
    net.finish(None);
    assert_eq!(net.done[1].as_ref().map(|o| o.late), Some(1));
    assert!(net.done.iter().all(|d| d.as_ref().is_some_and(|o| o.result.is_ok())));
}

#[test]
fn a_hierarchical_master_names_the_helpers_it_waits_for_at_the_deadline() {
    let mut net = Scripted::new(&hier_plan("arc"), LEN);
    net.start(0, vec![0.5; LEN]);
    // helper 2 (rank 2) is stopped: nothing reaches it, nothing leaves it
    let stopped = |f: usize, t: usize, _: &Header| f == 2 || t == 2;
    net.flush(stopped);
    // client 2 hears its model through helper 2, so clients 1 and 3 answer; the other
    // helpers give up on client 2 at half the deadline and report
    net.compute(5, 0, vec![1.0; LEN]);
    net.compute(7, 0, vec![1.0; LEN]);
    net.flush(stopped);
    for h in [1, 3, 4] {
        net.fire_timers(h, 5.0);
    }
    net.flush(stopped);
    net.fire_timers(0, 10.0);
    net.flush(stopped);
    let master = net.done[0].as_ref().map(|o| format!("{:?}", o.result));
    let why = master.unwrap_or_else(|| format!("{:?}", net.logs[0]));
    assert!(why.contains("iteration 0 did not complete within run.deadline = 10 s: no report from helpers 2"), "{why}");
}

#[test]
fn a_prelude_sums_every_workers_contribution_at_the_root() {
    let p = Cfg::linear("t", 120, 3, 3)
        .set("scheme.kind", "codedfedl")
        .set("scheme.delta", 0.2)
        .set("stragglers.model", "shifted-exp")
        .set("stragglers.a", 1e-5)
        .set("stragglers.mu", 1e5)
        .set("timing.compute", "modelled")
        .plan();
    assert!(p.prelude());
    let machines = (0..p.ranks).map(|r| prelude::<V>(&p, r, LEN).expect("a prelude machine")).collect();
    let mut net = Scripted::of(machines, 10).acking_sends();
    net.flush(|_, _, _| false);
    // the harness's contributions: rank r gives 10 values r + 1, the root zeros; in
    // transmissions of at most LEN values
    assert_eq!(net.delivered.len(), 1);
    assert_eq!(net.delivered[0].2, vec![2.0 + 3.0 + 4.0; 10]);
    assert!(net.done.iter().all(|d| d.as_ref().is_some_and(|o| o.clean && o.result.is_ok())));
    assert_eq!(net.sent_to[0], 3 * 10usize.div_ceil(LEN));
}

/// Every message of a run (two iterations and the shutdown) crosses a pair that both of its
/// machines name among their contacts, and the contacts are symmetric: a driver that opens
/// them before the loop opens every link the loop uses, and each side of a link waits for the
/// other. A ring under `MPI_Allreduce` names the collective instead. The machines that wait in
/// lockstep are those whose plan says so.
#[test]
fn every_message_crosses_a_pair_both_machines_name_as_contacts() {
    let five = ["scheme.kind=rar", "scheme.s=", "scheme.workers=5"];
    let ring = |alg: &str| plan(&[five[0], five[1], five[2], &format!("scheme.algorithm={alg}")]);
    let plans = [
        ("umw", plan(&["scheme.kind=umw"])),
        ("gc-cyclic", plan(&["scheme.kind=gc-cyclic", "scheme.s=1"])),
        ("granted", plan(&["scheme.kind=gc-cyclic", "scheme.s=1", "engine.upload=granted"])),
        ("cr", plan(&["scheme.kind=cr", "scheme.workers=", "scheme.n=3", "scheme.layers=2", "scheme.s=1"])),
        ("ring", ring("ring")),
        ("recursive-doubling", ring("recursive-doubling")),
        ("halving-doubling", ring("halving-doubling")),
        ("arc", hier_plan("arc")),
    ];
    for (name, p) in plans {
        let mut net = Scripted::new(&p, LEN);
        let contacts: Vec<Contacts> = net.nodes.iter().map(|m| m.contacts()).collect();
        for (a, c) in contacts.iter().enumerate() {
            assert!(c.collective.is_none() && !c.peers.contains(&a), "{name}: rank {a}: {c:?}");
            for &b in &c.peers {
                assert!(contacts[b].peers.contains(&a), "{name}: {a} names {b}, not back: {:?}", contacts[b]);
            }
        }
        for t in 0..2u64 {
            for r in (0..p.ranks).filter(|&r| p.delivers(r)) {
                net.input(r, Input::Start { t, model: Arc::new(vec![0.5; LEN]) });
            }
            net.flush(|_, _, _| false);
            while !net.computes.is_empty() {
                for (r, t) in net.computes.clone() {
                    net.compute(r, t, vec![1.0; LEN]);
                }
                net.flush(|_, _, _| false);
            }
        }
        let delivering = (0..p.ranks).filter(|&r| p.delivers(r)).count();
        assert_eq!(net.delivered.len(), 2 * delivering, "{name}: both iterations delivered");
        // the machines wait in lockstep (the driver's spin window) exactly where `outrun plan`
        // says they do: the plan's line and the machines decide it apart, and must agree
        let says = p.describe().contains("in a ring's steps");
        assert_eq!(net.eager_seen.iter().any(|&e| e), says, "{name}: lockstep per the machines vs the plan's line");
        for r in (0..p.ranks).filter(|&r| p.delivers(r)) {
            net.input(r, Input::Finish { failure: None });
        }
        net.flush(|_, _, _| false);
        assert!(net.pairs.len() >= p.ranks - 1, "{name}: {:?}", net.pairs);
        for &(a, b) in &net.pairs {
            assert!(
                contacts[a].peers.contains(&b),
                "{name}: {a} sent to {b}, not among its contacts {:?}",
                contacts[a]
            );
        }
    }
    let mut all = five.to_vec();
    all[0] = "scheme.kind=allreduce";
    let p = plan(&all);
    let net = Scripted::new(&p, LEN);
    for m in &net.nodes {
        assert_eq!(m.contacts(), Contacts { peers: vec![], collective: Some(LEN) });
    }
    // under MPI_Allreduce the library waits, not a ring's steps
    assert!(!p.describe().contains("in a ring's steps"), "{}", p.describe());
}
