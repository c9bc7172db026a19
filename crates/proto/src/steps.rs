//! The all-reduce schedules of the ring pattern: at every step, which range of its vector a
//! rank sends to whom, and which range it receives from whom and adds (reduce) or copies
//! (gather). A schedule is a pure function of (algorithm, rank, N, length), so a rank knows its
//! peers' schedules too (to tell a peer that never started from one stalled behind another).
//!
//! Every rank has the same number of steps and step k's message carries round k, so a message
//! is matched to its step by its header alone. Each value's final sum is formed on exactly one
//! rank and copied to the others, so every rank ends with bit-identical totals.
//!
//! For N not a power of two, recursive doubling and halving-doubling fold first (MPICH's way):
//! with p = 2^⌊log2 N⌋ and r = N − p, each even rank below 2r sends its vector to the next odd
//! rank at step 0 and sits out; the p remaining ranks run the power-of-two schedule; at the last
//! step each of those odd ranks sends the total back.

use std::ops::Range;

use outrun_config::RingAlgorithm;
use outrun_plan::alloc::split_sizes;

/// What a received range does to the rank's vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Add it (a partial sum).
    Add,
    /// Replace ours with it (a final sum).
    Copy,
}

/// One step of one rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// Send this range of the vector to this rank (first, before this step's receive).
    pub send: Option<(usize, Range<usize>)>,
    /// Then receive this range from this rank and apply it.
    pub recv: Option<(usize, Range<usize>, Op)>,
}

/// The steps of `rank` among `n` ranks all-reducing `len` values with `alg`.
pub(crate) fn schedule(alg: RingAlgorithm, rank: usize, n: usize, len: usize) -> Vec<Step> {
    assert!(rank < n, "rank {rank} of {n}");
    match alg.resolve(len) {
        RingAlgorithm::Ring => ring(rank, n, len),
        RingAlgorithm::RecursiveDoubling => folded(rank, n, len, doubling),
        RingAlgorithm::HalvingDoubling | RingAlgorithm::Auto => folded(rank, n, len, halving_doubling),
    }
}

/// Offsets of `parts` near-equal blocks of `len` values (parts + 1 entries).
fn offsets(len: usize, parts: usize) -> Vec<usize> {
    let mut offs = vec![0];
    for s in split_sizes(len, parts) {
        offs.push(offs.last().expect("starts with 0") + s);
    }
    offs
}

/// `parts` near-equal contiguous blocks of `len` values.
pub(crate) fn blocks(len: usize, parts: usize) -> Vec<Range<usize>> {
    offsets(len, parts).windows(2).map(|w| w[0]..w[1]).collect()
}

/// Reduce-scatter step k (k < N − 1): send segment r − k to the right, add segment r − k − 1
/// from the left; all-gather step k: pass the finished segments on.
fn ring(r: usize, n: usize, len: usize) -> Vec<Step> {
    let offs = offsets(len, n);
    let seg = |i: usize| offs[i]..offs[i + 1];
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    (0..2 * n.saturating_sub(1))
        .map(|k| {
            let (s, v, op) = if k < n - 1 {
                ((r + n - k) % n, (r + 2 * n - k - 1) % n, Op::Add)
            } else {
                let k = k - (n - 1);
                ((r + 1 + n - k) % n, (r + n - k) % n, Op::Copy)
            };
            Step { send: Some((right, seg(s))), recv: Some((left, seg(v), op)) }
        })
        .collect()
}

/// The power-of-two core's steps for participant `i` of `p`; `peer` maps a participant to its rank.
type Core = fn(i: usize, p: usize, len: usize, peer: &dyn Fn(usize) -> usize) -> Vec<Step>;

/// Fold N onto a power of two, run `core` among the participants, unfold.
fn folded(r: usize, n: usize, len: usize, core: Core) -> Vec<Step> {
    let p = 1 << n.ilog2();
    let rem = n - p;
    // participant i is rank 2i + 1 below 2·rem (its even neighbour folded into it), else i + rem
    let peer = move |i: usize| if i < rem { 2 * i + 1 } else { i + rem };
    let me = if r < 2 * rem { (r % 2 == 1).then_some(r / 2) } else { Some(r - rem) };
    let all = 0..len;
    let inner = match me {
        Some(i) => core(i, p, len, &peer),
        // sitting out: as many empty steps as the participants take
        None => vec![Step::default(); core(0, p, len, &peer).len()],
    };
    if rem == 0 {
        return inner;
    }
    let (first, last) = match (r < 2 * rem, r % 2) {
        (true, 0) => (
            Step { send: Some((r + 1, all.clone())), recv: None },
            Step { send: None, recv: Some((r + 1, all, Op::Copy)) },
        ),
        (true, _) => (
            Step { send: None, recv: Some((r - 1, all.clone(), Op::Add)) },
            Step { send: Some((r - 1, all)), recv: None },
        ),
        _ => (Step::default(), Step::default()),
    };
    std::iter::once(first).chain(inner).chain(std::iter::once(last)).collect()
}

/// log2 p steps: exchange the whole vector with the partner across bit i and add it.
fn doubling(i: usize, p: usize, len: usize, peer: &dyn Fn(usize) -> usize) -> Vec<Step> {
    (0..p.ilog2())
        .map(|b| {
            let partner = peer(i ^ (1 << b));
            Step { send: Some((partner, 0..len)), recv: Some((partner, 0..len, Op::Add)) }
        })
        .collect()
}

/// Reduce-scatter by recursive halving (keep the half of the window on our side of the highest
/// remaining bit, send the other half), then all-gather by recursive doubling (swap windows).
/// Participant i ends the reduce-scatter owning block i of p.
fn halving_doubling(i: usize, p: usize, len: usize, peer: &dyn Fn(usize) -> usize) -> Vec<Step> {
    let offs = offsets(len, p);
    let blocks = |b: Range<usize>| offs[b.start]..offs[b.end];
    let levels = p.ilog2();
    let mut steps = Vec::with_capacity(2 * levels as usize);
    let mut lo = 0;
    for b in (0..levels).rev() {
        let d = 1 << b;
        let partner = peer(i ^ d);
        let (keep, give) = if i & d == 0 { (lo..lo + d, lo + d..lo + 2 * d) } else { (lo + d..lo + 2 * d, lo..lo + d) };
        lo = keep.start;
        steps.push(Step { send: Some((partner, blocks(give))), recv: Some((partner, blocks(keep), Op::Add)) });
    }
    for b in 0..levels {
        let d = 1 << b;
        let partner = peer(i ^ d);
        let theirs = lo ^ d;
        steps.push(Step {
            send: Some((partner, blocks(lo..lo + d))),
            recv: Some((partner, blocks(theirs..theirs + d), Op::Copy)),
        });
        lo &= !(2 * d - 1);
    }
    steps
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Run every rank's schedule in lockstep on real vectors; returns the ranks' final vectors.
    pub(crate) fn run(alg: RingAlgorithm, n: usize, len: usize) -> Vec<Vec<f64>> {
        run_on(alg, (0..n).map(|r| (0..len).map(|j| value(r, j)).collect()).collect())
    }

    /// Rank r's value j in [`run`]'s vectors.
    pub(crate) fn value(r: usize, j: usize) -> f64 {
        1.0 / (1 + r * 7 + j) as f64 + (r as f64) * 1e-3
    }

    /// As [`run`], on the ranks' vectors `v` (all of one length).
    pub(crate) fn run_on(alg: RingAlgorithm, mut v: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let (n, len) = (v.len(), v[0].len());
        let scheds: Vec<Vec<Step>> = (0..n).map(|r| schedule(alg, r, n, len)).collect();
        let steps = scheds[0].len();
        assert!(scheds.iter().all(|s| s.len() == steps), "{alg:?} n={n}: every rank has the same number of steps");
        for k in 0..steps {
            // every send of step k reads the vector before that step's receives
            let mut mail: Vec<(usize, usize, Vec<f64>)> = vec![];
            for (r, s) in scheds.iter().enumerate() {
                if let Some((to, range)) = &s[k].send {
                    mail.push((r, *to, v[r][range.clone()].to_vec()));
                }
            }
            for (r, s) in scheds.iter().enumerate() {
                let Some((from, range, op)) = &s[k].recv else { continue };
                let pos = mail.iter().position(|m| m.0 == *from && m.1 == r);
                let (_, _, body) = mail.swap_remove(pos.unwrap_or_else(|| {
                    panic!("{alg:?} n={n} step {k}: rank {r} waits for {from}, who sends it nothing")
                }));
                assert_eq!(body.len(), range.len(), "{alg:?} n={n} step {k}: sizes agree");
                for (x, y) in v[r][range.clone()].iter_mut().zip(body) {
                    *x = if *op == Op::Add { *x + y } else { y };
                }
            }
            assert!(mail.is_empty(), "{alg:?} n={n} step {k}: every message is received at its step: {mail:?}");
        }
        v
    }

    #[test]
    fn every_schedule_sums_and_every_rank_agrees_bit_for_bit() {
        for alg in RingAlgorithm::ALL {
            for n in 1..=13 {
                for len in [0, 1, 5, n, 3 * n + 2, 100] {
                    let v = run(alg, n, len);
                    assert_eq!(v[0].len(), len);
                    for (j, got) in v[0].iter().enumerate() {
                        let exact: f64 = (0..n).map(|r| 1.0 / (1 + r * 7 + j) as f64 + (r as f64) * 1e-3).sum();
                        assert!((got - exact).abs() <= 1e-12 * exact.abs(), "{alg:?} n={n} len={len} [{j}]");
                    }
                    assert!(
                        v.iter().all(|x| x.iter().zip(&v[0]).all(|(a, b)| a.to_bits() == b.to_bits())),
                        "{alg:?} n={n}"
                    );
                }
            }
        }
    }

    #[test]
    fn step_counts_are_the_algorithms() {
        let count = |alg, n| schedule(alg, 0, n, 1000).len();
        assert_eq!(count(RingAlgorithm::Ring, 8), 14);
        assert_eq!(count(RingAlgorithm::RecursiveDoubling, 8), 3);
        assert_eq!(count(RingAlgorithm::HalvingDoubling, 8), 6);
        // folded: two more steps
        assert_eq!(count(RingAlgorithm::RecursiveDoubling, 12), 5);
        assert_eq!(count(RingAlgorithm::HalvingDoubling, 12), 8);
        assert_eq!(count(RingAlgorithm::HalvingDoubling, 1), 0);
        // auto: doubling up to 64 KiB, halving-doubling up to 1 MiB, the ring above
        assert_eq!(schedule(RingAlgorithm::Auto, 0, 8, 8192).len(), 3);
        assert_eq!(schedule(RingAlgorithm::Auto, 0, 8, 8193).len(), 6);
        assert_eq!(schedule(RingAlgorithm::Auto, 0, 8, 131_072).len(), 6);
        assert_eq!(schedule(RingAlgorithm::Auto, 0, 8, 131_073).len(), 14);
    }

    #[test]
    fn halving_doubling_moves_the_rings_bytes() {
        // each rank sends 2(N − 1)/N of the vector, as the ring does
        for n in [2, 4, 8, 16] {
            let len = 64 * n;
            let sent = |alg| -> usize {
                schedule(alg, 1, n, len).iter().filter_map(|s| s.send.as_ref()).map(|(_, r)| r.len()).sum()
            };
            assert_eq!(sent(RingAlgorithm::HalvingDoubling), 2 * (n - 1) * len / n);
            assert_eq!(sent(RingAlgorithm::Ring), 2 * (n - 1) * len / n);
        }
    }
}
