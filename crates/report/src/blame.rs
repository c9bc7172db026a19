//! Who the run waited for: per worker, the time its parent (the master, or a CodedReduce
//! parent) spent waiting with that worker's result as the last one it needed — had it come as
//! early as the one before it, the parent would have finished that much sooner — with how often
//! the straggler model slowed it, its late and abandoned results, and its compute time against
//! the median worker's. In a ring, where every rank waits alike and the slow one is otherwise
//! hidden, the rank whose result was ready last is the one every other rank waited for. A
//! PageRank run's servers (the shuffle pattern) all meet twice an iteration, at the Shuffle
//! after their Map and encoding, and at the exchange of the new ranks after their decoding and
//! Reduce: at each, the server that came last is the one the others waited for. Taking turns
//! (`scheme.shuffle = "turns"`), a barrier of all servers precedes every turn, and the server
//! whose own transfers took longest is the one the others waited for at those barriers. With
//! every transfer at once, a slow link holds up every server's Shuffle alike; each server logs,
//! per other server, when the last message that did not pass through it arrived, and the server
//! without whose messages the Shuffle's last message would have come soonest is the one.
//!
//! Read from the run's typed log (`rank-<r>.jsonl`), so it works on engine and simulator runs.

use std::collections::{BTreeMap, HashMap};

use outrun_runlog::event::{Arrival, Event, Iter, Phases, Status};
use serde::Serialize;

/// One worker's share of the waiting.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Blame {
    /// Worker id (a PageRank server's number where `server`).
    pub worker: usize,
    /// Whether `worker` is a shuffle server's number: server k is the straggler model's worker
    /// k + 1 (`[stragglers] workers`), as in a ring.
    pub server: bool,
    /// Its rank.
    pub rank: usize,
    /// Seconds its parent waited with this worker's result the last it needed.
    pub waited_s: f64,
    /// Iterations in which its result was the last one its parent needed.
    pub last_needed: usize,
    /// Of `waited_s`, the seconds charged for a shuffle server's transfers (its turns, or the
    /// Shuffle's messages through it: its link) rather than for coming late to a meeting (its
    /// computation); 0 elsewhere.
    pub link_s: f64,
    /// Its share of all the waiting attributed to workers (0–1): the score it is ranked by.
    pub score: f64,
    /// Iterations the straggler model made it slow.
    pub straggled: usize,
    /// Its messages its parent discarded as late (late results and abandonments).
    pub late: usize,
    /// Iterations it abandoned (a newer model came before its result).
    pub abandoned: usize,
    /// Its median time from compute start to result ready (injected delay included) over the
    /// median worker's (1 = typical).
    pub compute_ratio: f64,
}

/// The workers of a run, most blamed first, from its rank logs (rank → records).
pub fn blame(events: &HashMap<usize, Vec<Event>>) -> Vec<Blame> {
    let mut by_rank: BTreeMap<usize, Blame> = BTreeMap::new();
    let mut computes: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    // a ring's ranks by iteration: (rank, when its result was ready)
    let mut ready: BTreeMap<u64, Vec<(usize, f64)>> = BTreeMap::new();
    // a shuffle's servers by iteration: (rank, when it came to the Shuffle, to the new ranks)
    let mut meets: BTreeMap<u64, Vec<(usize, [f64; 2])>> = BTreeMap::new();
    // and (rank, seconds of its Shuffle in its turns' transfers, seconds in the turns' barriers)
    let mut turns: BTreeMap<u64, Vec<(usize, f64, f64)>> = BTreeMap::new();
    // and (rank, per other server when its last message not through that server arrived)
    let mut links: BTreeMap<u64, Vec<(usize, &[Arrival])>> = BTreeMap::new();
    for (&rank, evs) in events {
        for e in evs {
            match e {
                Event::Setup(s) => {
                    if let Some(w) = s.worker {
                        entry(&mut by_rank, rank, w);
                    } else if let Some(k) = s.server {
                        entry(&mut by_rank, rank, k).server = true;
                    }
                }
                Event::Iteration(p) => {
                    let (arrive, compute) = shuffle_times(p);
                    meets.entry(p.t).or_default().push((rank, arrive));
                    turns.entry(p.t).or_default().push((rank, p.shuffle_s - p.barrier_s, p.barrier_s));
                    if let Some(w) = &p.last_without {
                        links.entry(p.t).or_default().push((rank, w));
                    }
                    computes.entry(rank).or_default().push(compute);
                    // a server the straggler model slowed (its setup line comes first)
                    if let Some(b) = by_rank.get_mut(&rank) {
                        b.straggled += usize::from(p.injected_s.is_some_and(|s| s > 0.0));
                    }
                }
                Event::Iter(i) => {
                    if let Some(w) = i.worker {
                        let b = entry(&mut by_rank, rank, w);
                        b.straggled += usize::from(i.compute.straggler == Some(true));
                        b.abandoned += usize::from(i.status == Some(Status::Abandoned));
                        // compute, modelled time and injected delay: until the result was ready
                        if let (Some(start), Some(r)) = (i.compute.compute_start, i.ready) {
                            computes.entry(rank).or_default().push(r - start);
                        }
                        if let (Some(r), Some(_)) = (i.ready, i.reduced) {
                            ready.entry(i.t).or_default().push((rank, r));
                        }
                    }
                }
                Event::Late(l) => {
                    if let Some(b) = by_rank.get_mut(&l.child) {
                        b.late += 1;
                    } else {
                        // the child's setup line may come later in the map's order
                        let b = entry(&mut by_rank, l.child, usize::MAX);
                        b.late += 1;
                    }
                }
                _ => {}
            }
        }
    }
    // a parent's wait for its last needed result
    for evs in events.values() {
        for e in evs {
            if let Event::Iter(i) = e {
                charge_last(i, &mut by_rank);
            }
        }
    }
    // a ring: the rank ready last held up the others
    for times in ready.values_mut() {
        charge_latest(times, &mut by_rank, false);
    }
    // a shuffle: the server that came last to each of the iteration's two meetings
    for servers in meets.values() {
        for step in 0..2 {
            let mut times: Vec<(usize, f64)> = servers.iter().map(|&(rank, at)| (rank, at[step])).collect();
            charge_latest(&mut times, &mut by_rank, false);
        }
    }
    // a turn-taking shuffle: while a turn's transfers go on, every server outside them waits at
    // the next turn's barrier, so the server busiest in its turns (its sends and receives: its
    // link) held the others up by its seconds beyond the next busiest's; with every transfer at
    // once (no barriers), the server whose messages delayed the Shuffle's last one most
    for (t, servers) in &turns {
        if servers.iter().any(|&(_, _, barrier)| barrier > 0.0) {
            let mut busy: Vec<(usize, f64)> = servers.iter().map(|&(rank, busy, _)| (rank, busy)).collect();
            charge_latest(&mut busy, &mut by_rank, true);
        } else if let (Some(received), Some(meet)) = (links.get(t), meets.get(t)) {
            let mut savings = link_savings(received, meet);
            charge_latest(&mut savings, &mut by_rank, true);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let mut medians: BTreeMap<usize, f64> = BTreeMap::new();
    for (rank, v) in computes.iter_mut() {
        if let Some(m) = median(v) {
            medians.insert(*rank, m);
        }
    }
    let typical = median(&mut medians.values().copied().collect()).filter(|m| *m > 0.0);
    let total: f64 = by_rank.values().map(|b| b.waited_s).sum();
    let mut out: Vec<Blame> = by_rank
        .into_iter()
        .filter(|(_, b)| b.worker != usize::MAX)
        .map(|(rank, mut b)| {
            b.score = if total > 0.0 { b.waited_s / total } else { 0.0 };
            b.compute_ratio = match (medians.get(&rank), typical) {
                (Some(m), Some(t)) => m / t,
                _ => f64::NAN,
            };
            b
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.straggled.cmp(&a.straggled)).then(a.worker.cmp(&b.worker)));
    out
}

/// The worker entry of `rank` (its worker id set when known).
fn entry(by_rank: &mut BTreeMap<usize, Blame>, rank: usize, worker: usize) -> &mut Blame {
    let b = by_rank.entry(rank).or_insert(Blame {
        worker,
        server: false,
        rank,
        waited_s: 0.0,
        last_needed: 0,
        link_s: 0.0,
        score: 0.0,
        straggled: 0,
        late: 0,
        abandoned: 0,
        compute_ratio: f64::NAN,
    });
    if worker != usize::MAX {
        b.worker = worker;
    }
    b
}

/// A parent's iteration: the child whose accepted result came last is charged the time since
/// the one before it (or since the parent had the model, when it was the only one).
fn charge_last(i: &Iter, by_rank: &mut BTreeMap<usize, Blame>) {
    if let Some((rank, gap)) = last_needed(i) {
        let b = entry(by_rank, rank, usize::MAX);
        b.waited_s += gap;
        b.last_needed += 1;
    }
}

/// The child rank whose result a parent's iteration record accepted last, and the seconds
/// between it and the result before it (or the parent's model, when it was the only one):
/// how much sooner the parent would have had everything had it come as early. None for a
/// record that collected nothing (a worker's, a ring's).
pub fn last_needed(i: &Iter) -> Option<(usize, f64)> {
    let arrivals = i.collect.arrivals.as_ref()?;
    let mut times: Vec<(usize, f64)> = arrivals.iter().map(|a| (a.rank, a.at)).collect();
    times.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (rank, last, before) = match times[..] {
        [] => return None,
        [(rank, last)] => (rank, last, i.sent.or(i.model)?),
        [.., (_, before), (rank, last)] => (rank, last, before),
    };
    Some((rank, (last - before).max(0.0)))
}

/// Where every rank waits for every other (a ring's all-reduce, a shuffle's meeting or its
/// transfers), the rank that came last of `times` (rank, when; or how long it kept the others)
/// is charged the time since the one before it (for its `link` too when it is a transfers').
fn charge_latest(times: &mut [(usize, f64)], by_rank: &mut BTreeMap<usize, Blame>, link: bool) {
    // a tie goes to the higher rank, whatever order the logs were read in
    times.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    if let [.., (_, before), (rank, last)] = times[..] {
        let b = entry(by_rank, rank, usize::MAX);
        b.waited_s += last - before;
        b.last_needed += 1;
        if link {
            b.link_s += last - before;
        }
    }
}

/// With every transfer of a Shuffle at once, what each server's links cost it: the last message
/// of all arrived at the latest of `received`'s times (per receiver, per other server s, when
/// the last message that did not pass through s arrived), and without the messages through s at
/// the latest of those not through s; s saves the difference, less how late it came to the
/// Shuffle after every other server (`meet`: rank, when it came to the Shuffle and to the new
/// ranks), which the meeting charged (its messages left that much later). A slow link slows
/// every message through its server, so that server saves the most; a message that merely came
/// last saves the servers it passed through alike.
fn link_savings(received: &[(usize, &[Arrival])], meet: &[(usize, [f64; 2])]) -> Vec<(usize, f64)> {
    let latest = |skip: Option<usize>| {
        received
            .iter()
            .filter(|&&(to, _)| Some(to) != skip)
            .flat_map(|&(_, w)| w.iter().filter(|a| skip.is_none_or(|s| a.rank == s)).map(|a| a.at))
            .reduce(f64::max)
    };
    let Some(all) = latest(None) else { return Vec::new() };
    let late = |s: usize| {
        let others = meet.iter().filter(|&&(k, _)| k != s).map(|&(_, at)| at[0]).reduce(f64::max);
        let mine = meet.iter().find(|&&(k, _)| k == s).map(|&(_, at)| at[0]);
        match (mine, others) {
            (Some(m), Some(o)) => (m - o).max(0.0),
            _ => 0.0,
        }
    };
    meet.iter().filter_map(|&(s, _)| Some((s, (all - latest(Some(s))? - late(s)).max(0.0)))).collect()
}

/// A shuffle server's iteration: when it came to the Shuffle (its Map and encoding done) and to
/// the exchange of the new ranks (its decoding and Reduce done), on the run's clock, and its
/// seconds of computation (the four phases without communication).
fn shuffle_times(p: &Phases) -> ([f64; 2], f64) {
    let arrive = [p.start() + p.map_s + p.encode_s, p.end - p.redistribute_s];
    (arrive, p.map_s + p.encode_s + p.decode_s + p.reduce_s)
}

/// The table `outrun blame` prints and the report shows (the `top` most blamed workers); with
/// a column for the part charged for transfers where any was (a shuffle's servers), and for a
/// shuffle's servers a line saying which `[stragglers]` worker each is.
pub fn markdown(rows: &[Blame], top: usize) -> String {
    let links = rows.iter().any(|b| b.link_s > 0.0);
    let servers = rows.iter().any(|b| b.server);
    let (head, rule) = if links { (" of which transfers ms |", "---|") } else { ("", "") };
    let mut o = format!(
        "| {} | rank | waited ms (last needed) |{head} iterations last needed | score | straggled | late | abandoned | compute / median |\n|---|---|---|{rule}---|---|---|---|---|---|\n",
        if servers { "server" } else { "worker" }
    );
    for b in rows.iter().take(top) {
        let ratio = if b.compute_ratio.is_finite() { format!("{:.2}", b.compute_ratio) } else { "-".into() };
        let link = if links { format!(" {:.1} |", b.link_s * 1e3) } else { String::new() };
        o.push_str(&format!(
            "| {} | {} | {:.1} |{link} {} | {:.2} | {} | {} | {} | {ratio} |\n",
            b.worker,
            b.rank,
            b.waited_s * 1e3,
            b.last_needed,
            b.score,
            b.straggled,
            b.late,
            b.abandoned
        ));
    }
    if servers {
        o.push_str("\n(server k is the straggler model's worker k + 1: `[stragglers] workers = [k + 1]` slows it)\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(lines: &[(usize, &str)]) -> HashMap<usize, Vec<Event>> {
        let mut m: HashMap<usize, Vec<Event>> = HashMap::new();
        for (rank, l) in lines {
            m.entry(*rank).or_default().push(serde_json::from_str(l).unwrap());
        }
        m
    }

    #[test]
    fn the_last_needed_result_is_charged_the_gap_before_it() {
        let logs = [
            (1, r#"{"ev":"iter","t":1,"worker":1,"compute_start":0.0,"ready":0.1,"straggler":false}"#),
            (2, r#"{"ev":"iter","t":1,"worker":2,"compute_start":0.0,"ready":0.5,"straggler":true}"#),
            (0, r#"{"ev":"iter","t":1,"sent":0.0,"arrivals":[[1,0.1],[2,0.5]]}"#),
            (1, r#"{"ev":"iter","t":2,"worker":1,"compute_start":0.5,"ready":0.6,"straggler":false}"#),
            (2, r#"{"ev":"iter","t":2,"worker":2,"compute_start":0.5,"ready":0.7,"straggler":false}"#),
            (0, r#"{"ev":"iter","t":2,"sent":0.5,"arrivals":[[2,0.7]]}"#),
            (0, r#"{"ev":"late","t":2,"child":1,"msg_t":2,"kind":"result","at":0.8}"#),
        ];
        let rows = blame(&events(&logs));
        assert_eq!(rows.iter().map(|b| b.worker).collect::<Vec<_>>(), vec![2, 1]);
        let (w2, w1) = (&rows[0], &rows[1]);
        // 0.4 s after worker 1's result in iteration 1, 0.2 s after the model in iteration 2
        assert!((w2.waited_s - 0.6).abs() < 1e-12, "{w2:?}");
        assert_eq!((w2.last_needed, w2.straggled, w2.score), (2, 1, 1.0));
        assert_eq!((w1.late, w1.waited_s), (1, 0.0));
        // medians of 0.1 / 0.1 and 0.5 / 0.2 (the upper median of two): worker 2 is the slower
        assert!(w2.compute_ratio > w1.compute_ratio, "{rows:?}");
    }

    #[test]
    fn in_a_ring_the_rank_ready_last_is_charged() {
        let logs = [
            (0, r#"{"ev":"iter","t":1,"worker":1,"ready":0.1,"reduced":0.9}"#),
            (1, r#"{"ev":"iter","t":1,"worker":2,"ready":0.8,"reduced":0.9}"#),
            (2, r#"{"ev":"iter","t":1,"worker":3,"ready":0.2,"reduced":0.9}"#),
        ];
        let rows = blame(&events(&logs));
        assert_eq!((rows[0].worker, rows[0].rank), (2, 1));
        assert!((rows[0].waited_s - 0.6).abs() < 1e-12);
        assert!(rows[1..].iter().all(|b| b.waited_s == 0.0 && b.score == 0.0));
        assert_eq!(markdown(&rows, 1).lines().count(), 3);
        // no transfers charged: no column for them
        assert!(!markdown(&rows, 1).contains("transfers"));
    }

    /// A PageRank server logs its phases: the one that comes last to the Shuffle (a slow Map)
    /// or to the new ranks (a slow decode) is charged the time since the one before it.
    #[test]
    fn a_shuffle_server_that_comes_last_to_a_meeting_is_charged() {
        let it = |t: u64, end: f64, map: f64, shuffle: f64, decode: f64| {
            format!(
                r#"{{"ev":"iteration","t":{t},"end":{end},"map_s":{map},"encode_s":0.5,"shuffle_s":{shuffle},"decode_s":{decode},"reduce_s":0.5,"redistribute_s":1.0,"values_mapped":1,"l_bytes":1,"wire_bytes":1,"recv_bytes":1,"redistribute_bytes":1,"change_l1":0.0}}"#
            )
        };
        // iteration 0 starts at 0 on every server: server 2 maps 3 s longer (its Shuffle starts
        // at 4.5, the others' at 1.5, all end at 6); server 0 decodes 0.5 s longer than server
        // 2 and 1 s longer than server 1. Iteration 1 is the same on every server.
        let logs: Vec<(usize, String)> = vec![
            (0, r#"{"ev":"setup","rank":0,"server":0,"host":"h0","at":0.0}"#.into()),
            (1, r#"{"ev":"setup","rank":1,"server":1,"host":"h1","at":0.0}"#.into()),
            (2, r#"{"ev":"setup","rank":2,"server":2,"host":"h2","at":0.0}"#.into()),
            (0, it(0, 9.5, 1.0, 4.5, 2.0)),
            (1, it(0, 8.5, 1.0, 4.5, 1.0)),
            (2, it(0, 9.0, 4.0, 1.5, 1.5)),
            (0, it(1, 15.0, 1.0, 1.0, 1.0)),
            (1, it(1, 15.0, 1.0, 1.0, 1.0)),
            (2, it(1, 15.0, 1.0, 1.0, 1.0)),
        ];
        let logs: Vec<(usize, &str)> = logs.iter().map(|(r, l)| (*r, l.as_str())).collect();
        let rows = blame(&events(&logs));
        assert_eq!(rows.iter().map(|b| b.worker).collect::<Vec<_>>(), vec![2, 0, 1]);
        // server 2: 3 s at iteration 0's Shuffle; server 0: 0.5 s after server 2 at the new
        // ranks; iteration 1's ties charge nothing
        assert!((rows[0].waited_s - 3.0).abs() < 1e-9, "{rows:?}");
        assert!((rows[1].waited_s - 0.5).abs() < 1e-9, "{rows:?}");
        assert_eq!(rows[2].waited_s, 0.0);
        assert!((rows[0].score - 3.0 / 3.5).abs() < 1e-9, "{rows:?}");
        // computation: server 2's median (the upper of two) 6.5 s against the median server's 4
        assert!(rows[0].compute_ratio > 1.5, "{rows:?}");
    }

    /// Taking turns, the server whose transfers took longest (its Shuffle less its seconds at
    /// the turns' barriers) is charged its seconds beyond the next busiest's; with every
    /// transfer at once (no barriers) and no `last_without` logged (a log from before it),
    /// nobody is charged for the Shuffle.
    #[test]
    fn taking_turns_the_server_busiest_in_its_turns_is_charged() {
        let it = |t: u64, barrier: f64| {
            format!(
                r#"{{"ev":"iteration","t":{t},"end":{},"map_s":1.0,"encode_s":0.5,"shuffle_s":10.0,"barrier_s":{barrier},"decode_s":1.0,"reduce_s":0.5,"redistribute_s":1.0,"values_mapped":1,"l_bytes":1,"wire_bytes":1,"recv_bytes":1,"redistribute_bytes":1,"change_l1":0.0}}"#,
                14.0 * (t + 1) as f64
            )
        };
        let mut logs: Vec<(usize, String)> = (0..3)
            .map(|k| (k, format!(r#"{{"ev":"setup","rank":{k},"server":{k},"host":"h{k}","at":0.0}}"#)))
            .collect();
        // iteration 0 taking turns: server 1 in transfers 5 s, server 2 3 s, server 0 2 s;
        // iteration 1 every transfer at once
        for (k, barrier) in [(0, 8.0), (1, 5.0), (2, 7.0)] {
            logs.push((k, it(0, barrier)));
            logs.push((k, it(1, 0.0)));
        }
        let logs: Vec<(usize, &str)> = logs.iter().map(|(r, l)| (*r, l.as_str())).collect();
        let rows = blame(&events(&logs));
        assert_eq!((rows[0].worker, rows[0].rank), (1, 1), "{rows:?}");
        assert!((rows[0].waited_s - 2.0).abs() < 1e-9, "{rows:?}");
        assert_eq!((rows[0].score, rows[0].link_s), (1.0, rows[0].waited_s));
        // the meetings tie (every server's phases alike), so theirs charge nothing
        assert!(rows[1..].iter().all(|b| b.waited_s == 0.0), "{rows:?}");
    }

    /// With every transfer at once, the server whose messages were all slow (its link) is
    /// charged what they delayed the Shuffle's last message beyond any other server's; a server
    /// late to the Shuffle (a slow Map) is charged at the meeting only.
    #[test]
    fn at_once_the_server_whose_messages_were_all_slow_is_charged() {
        // (iteration, end, map_s, shuffle_s, receiver, when the message from each server came):
        // encode 0.5, decode 1, reduce 0.5 and redistribute 1 s on every server; the receiver
        // logs, per other server s, the last message not from s (uncoded: a message passes
        // through its sender and receiver)
        let it = |t: u64, end: f64, map: f64, shuffle: f64, to: usize, from: &dyn Fn(usize) -> f64| {
            let w: Vec<String> = (0..4)
                .filter(|&s| s != to)
                .map(|s| {
                    let last = (0..4).filter(|&j| j != to && j != s).map(from).fold(f64::MIN, f64::max);
                    format!("[{s},{last}]")
                })
                .collect();
            format!(
                r#"{{"ev":"iteration","t":{t},"end":{end},"map_s":{map},"encode_s":0.5,"shuffle_s":{shuffle},"decode_s":1.0,"reduce_s":0.5,"redistribute_s":1.0,"values_mapped":1,"l_bytes":1,"wire_bytes":1,"recv_bytes":1,"redistribute_bytes":1,"change_l1":0.0,"last_without":[{}]}}"#,
                w.join(",")
            )
        };
        let mut logs: Vec<(usize, String)> = (0..4)
            .map(|k| (k, format!(r#"{{"ev":"setup","rank":{k},"server":{k},"host":"h{k}","at":0.0}}"#)))
            .collect();
        for k in 0..4usize {
            // iteration 0: every Shuffle from 1.5 to 7.5; a message takes 2 s, 6 s to or from
            // server 3 (its link), but 5.5 s from server 1 to it
            let slow = |j: usize| match (j, k) {
                (1, 3) => 7.0,
                (3, _) | (_, 3) => 7.5,
                _ => 3.5,
            };
            logs.push((k, it(0, 10.0, 1.0, 6.0, k, &slow)));
            // iteration 1 from 10: server 2 maps 3 s longer (its Shuffle from 14.5, the others'
            // from 11.5); every message takes 2 s from the later of its two servers' start
            let start = |j: usize| if j == 2 { 14.5f64 } else { 11.5 };
            let (map, shuffle) = if k == 2 { (4.0, 2.0) } else { (1.0, 5.0) };
            logs.push((k, it(1, 19.0, map, shuffle, k, &|j| start(j).max(start(k)) + 2.0)));
        }
        let logs: Vec<(usize, &str)> = logs.iter().map(|(r, l)| (*r, l.as_str())).collect();
        let rows = blame(&events(&logs));
        assert_eq!(rows.iter().map(|b| b.worker).take(2).collect::<Vec<_>>(), vec![3, 2], "{rows:?}");
        // server 3: the last message at 7.5, 3.5 without those through it; without any other
        // server's still 7.5; all of it for its transfers
        assert!((rows[0].waited_s - 4.0).abs() < 1e-9, "{rows:?}");
        assert!((rows[0].link_s - 4.0).abs() < 1e-9, "{rows:?}");
        // server 2's 3 s are for coming late, none for its transfers
        assert_eq!(rows[1].link_s, 0.0, "{rows:?}");
        let table = markdown(&rows, 2);
        assert!(rows.iter().all(|b| b.server), "{rows:?}");
        assert!(table.starts_with("| server | rank | waited ms (last needed) | of which transfers ms |"), "{table}");
        assert!(
            table.ends_with(
                "(server k is the straggler model's worker k + 1: `[stragglers] workers = [k + 1]` slows it)\n"
            ),
            "{table}"
        );
        assert!(table.contains("| 3 | 3 | 4000.0 | 4000.0 |"), "{table}");
        assert!(table.contains("| 2 | 2 | 3000.0 | 0.0 |"), "{table}");
        // server 2: 3 s at iteration 1's Shuffle; its messages came 3 s after the others', no
        // more than it came late
        assert!((rows[1].waited_s - 3.0).abs() < 1e-9, "{rows:?}");
        assert!(rows[2..].iter().all(|b| b.waited_s == 0.0), "{rows:?}");
        // every message through every server (two servers, or one group of all): nobody
        let meet = [(0, [1.0, 5.0]), (1, [1.0, 5.0])];
        assert!(link_savings(&[(0, &[][..]), (1, &[][..])], &meet).is_empty());
        assert!(link_savings(&[], &meet).is_empty());
    }
}
