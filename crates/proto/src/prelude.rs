//! The prelude: a one-time phase before the loop, in which every worker sends the root one
//! vector and the root sums them (CodedFedL's parity upload: each client's G_j·W_j·[X̂_j Y_j]).
//!
//! 1. Every rank asks its driver for its contribution ([`Output::Contribute`]; the job computes
//!    it, untimed) and is fed it back ([`Input::Contribution`]); the root's (zeros) gives the
//!    sum's length and starts its clock.
//! 2. A worker sends its contribution to the root in transmissions of at most its payload's
//!    length (`[Contribution, 0]`, round k, meta the offset), one after the other: the next
//!    when the driver says the previous one has left ([`Input::Sent`]), so a link model's
//!    delays add up as the link's transmissions do.
//! 3. The root adds each transmission at its offset; with every worker's last one it hands the
//!    sum and the phase's seconds to its driver ([`Output::Gathered`]) and is done. A worker is
//!    done once its transmissions are out (the driver flushes them).
//!
//! A worker silent past `run.deadline` fails the phase at the root with one line naming it, as
//! a missing result fails an iteration. Both drivers run this machine like any other, before
//! the loop's machines: neither knows which scheme asked for it.

use std::collections::VecDeque;
use std::sync::Arc;

use outrun_plan::Plan;
use outrun_runlog::event::Event;

use crate::hist::Histogram;
use crate::machine::{Clock, Failure, Input, Machine, Outcome, Output};
use crate::roles::Vector;
use crate::wire::{Header, Kind, Meta, Msg};

/// The root's one timer: the phase's deadline.
const DEADLINE: u64 = 1;

/// One rank's part of the prelude.
pub struct PreludeNode<P: Vector> {
    root: bool,
    /// Values per transmission (the rank's payload length).
    packet: usize,
    deadline: f64,
    /// The root: each worker's (rank, worker id) and the values still expected from it.
    pending: Vec<(usize, usize, Option<usize>)>,
    /// A worker: its contribution and the transmissions sent so far.
    value: Option<Arc<P>>,
    sent: usize,
    sum: Option<P>,
    /// Transmissions that arrived before the root's own contribution (kept, then added).
    early: Vec<(usize, Msg<P>)>,
    start: f64,
    done: bool,
    out: VecDeque<Output<P>>,
}

/// The prelude machine of `rank`, if `plan` has a prelude (CodedFedL's parity upload), for
/// payloads of `len` values (a worker's transmissions are at most that long).
pub fn prelude<P: Vector + 'static>(plan: &Plan, rank: usize, len: usize) -> Option<Box<dyn Machine<P>>> {
    plan.prelude().then(|| Box::new(PreludeNode::<P>::new(plan, rank, len)) as Box<dyn Machine<P>>)
}

impl<P: Vector> PreludeNode<P> {
    /// Rank `rank` of `plan`'s prelude, for payloads of `len` values. Its first output (ask for
    /// the contribution) is queued: a driver polls before it feeds anything.
    pub fn new(plan: &Plan, rank: usize, len: usize) -> Self {
        let root = rank == 0;
        let pending =
            if root { plan.nodes.iter().filter_map(|n| n.worker.map(|w| (n.rank, w, None))).collect() } else { vec![] };
        PreludeNode {
            root,
            packet: len.max(1),
            deadline: plan.run.deadline,
            pending,
            value: None,
            sent: 0,
            sum: None,
            early: vec![],
            start: 0.0,
            done: false,
            out: VecDeque::from([Output::Contribute]),
        }
    }

    fn finish(&mut self, result: Result<(), Failure>) {
        self.done = true;
        let clean = result.is_ok();
        self.out.push_back(Output::Done(Outcome {
            result,
            clean,
            late: 0,
            up_sent: 0,
            latency: Histogram::default(),
            dropped: vec![],
            silent: vec![],
        }));
    }

    fn contribution(&mut self, now: f64, value: P) {
        if self.root {
            self.start = now;
            self.sum = Some(value);
            self.out.push_back(Output::Timer { id: DEADLINE, at: now + self.deadline });
            for (from, msg) in std::mem::take(&mut self.early) {
                self.receive(now, from, msg);
            }
            self.complete(now);
            return;
        }
        self.value = Some(Arc::new(value));
        self.send_next();
    }

    /// A worker: its next transmission, or done after the last has left.
    fn send_next(&mut self) {
        let Some(value) = &self.value else { return };
        let (n, from) = (value.len(), self.sent * self.packet);
        if from >= n && (self.sent > 0 || n > 0) {
            self.value = None;
            self.finish(Ok(()));
            return;
        }
        let len = self.packet.min(n - from);
        let k = u32::try_from(self.sent).expect("fewer than 2^32 transmissions");
        let head = Header { round: k, meta: Meta::Offset(from as u64), ..Header::new(Kind::Contribution, 0) };
        let body = if len == n { value.clone() } else { Arc::new(P::range(value, from, len)) };
        self.sent += 1;
        let msg = Msg { head, body: Some(body) };
        self.out.push_back(Output::Send { to: vec![0], msg, track: Some(u64::from(k)) });
    }

    fn receive(&mut self, now: f64, from: usize, msg: Msg<P>) {
        if msg.head.kind != Kind::Contribution || self.done {
            return;
        }
        let Meta::Offset(at) = msg.head.meta else { return };
        let Some(body) = msg.body else { return };
        let (at, len) = (at as usize, body.len());
        let Some(sum) = self.sum.as_mut() else {
            self.early.push((from, Msg { head: msg.head, body: Some(body) }));
            return;
        };
        let Some(entry) = self.pending.iter_mut().find(|(r, _, _)| *r == from) else { return };
        if at + len > sum.len() {
            let message = format!(
                "the prelude's contribution of rank {from} reaches value {} of a sum of {}",
                at + len,
                sum.len()
            );
            let missing = vec![entry.1];
            self.finish(Err(Failure::Prelude { missing, message }));
            return;
        }
        sum.add_scaled(at, &body, 0, len, 1.0);
        let left = entry.2.unwrap_or(sum.len()).saturating_sub(len);
        entry.2 = Some(left);
        if !self.done {
            self.complete(now);
        }
    }

    /// The root: with every worker's contribution in, the sum goes to the driver.
    fn complete(&mut self, now: f64) {
        if self.pending.iter().any(|&(_, _, left)| left != Some(0)) {
            return;
        }
        let total = self.sum.take().expect("the root's own contribution came first");
        self.out.push_back(Output::Gathered { total, secs: now - self.start });
        self.finish(Ok(()));
    }

    /// The root's deadline: the workers still owing values are named.
    fn expire(&mut self) {
        if self.done {
            return;
        }
        let late: Vec<(usize, usize)> =
            self.pending.iter().filter(|&&(_, _, left)| left != Some(0)).map(|&(r, w, _)| (r, w)).collect();
        let names: Vec<String> = late.iter().map(|(r, w)| format!("{w} (rank {r})")).collect();
        let message = format!(
            "no contribution from worker(s) {} within run.deadline = {} s of the prelude's start (the one-time phase before the first iteration)",
            names.join(", "),
            self.deadline
        );
        self.out.push_back(Output::Log(Event::warn(self.start + self.deadline, message.clone())));
        self.finish(Err(Failure::Prelude { missing: late.iter().map(|&(_, w)| w).collect(), message }));
    }
}

impl<P: Vector> Machine<P> for PreludeNode<P> {
    fn handle(&mut self, clock: &dyn Clock, input: Input<P>) {
        match input {
            Input::Contribution { value } if !self.done => self.contribution(clock.now(), value),
            Input::Recv { from, msg } => self.receive(clock.now(), from, msg),
            Input::Sent { track } if !self.root && track + 1 == self.sent as u64 => self.send_next(),
            Input::Timer { id: DEADLINE } if self.root => self.expire(),
            _ => {}
        }
    }

    fn poll(&mut self) -> Option<Output<P>> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::At;

    /// A star of 3 workers' prelude: (root, workers) with payloads of `len` values.
    fn star(len: usize) -> (PreludeNode<Vec<f64>>, Vec<PreludeNode<Vec<f64>>>) {
        let text = "[run]\nname = 'p'\niterations = 1\ndeadline = 5.0\n\
            [data]\nkind = 'linear-synthetic'\nsamples = 30\nfeatures = 2\n\
            [model]\nloss = 'least-squares'\nlr = 0.1\n[scheme]\nkind = 'umw'\nworkers = 3\n";
        let plan = Plan::from_toml(text, outrun_plan::Shape { samples: 30, features: 2 }).unwrap();
        let root = PreludeNode::new(&plan, 0, len);
        (root, (1..=3).map(|r| PreludeNode::new(&plan, r, len)).collect())
    }

    fn drain(m: &mut PreludeNode<Vec<f64>>) -> Vec<Output<Vec<f64>>> {
        std::iter::from_fn(|| m.poll()).collect()
    }

    #[test]
    fn the_root_sums_every_workers_transmissions_at_their_offsets() {
        let (mut root, mut workers) = star(3);
        assert!(matches!(drain(&mut root)[..], [Output::Contribute]));
        root.handle(&At(1.0), Input::Contribution { value: vec![0.0; 7] });
        assert!(matches!(drain(&mut root)[..], [Output::Timer { id: DEADLINE, at }] if at == 6.0));
        let mut sends = vec![];
        for (k, w) in workers.iter_mut().enumerate() {
            drain(w);
            let value: Vec<f64> = (0..7).map(|i| (10 * k + i) as f64).collect();
            w.handle(&At(1.0), Input::Contribution { value });
            // ⌈7/3⌉ transmissions of at most 3 values, each once the previous one has left,
            // then done
            for round in 0..3 {
                let out = drain(w);
                let [Output::Send { msg, track: Some(track), .. }] = &out[..] else { panic!("{out:?}") };
                assert_eq!((msg.head.round, *track), (round, u64::from(round)));
                sends.push((k + 1, msg.clone()));
                w.handle(&At(1.0), Input::Sent { track: *track });
            }
            assert!(matches!(&drain(w)[..], [Output::Done(o)] if o.clean && o.result.is_ok()));
        }
        // in reverse: the offsets, not the order, place the values
        for (from, msg) in sends.into_iter().rev() {
            root.handle(&At(2.5), Input::Recv { from, msg });
        }
        let out = drain(&mut root);
        let Output::Gathered { total, secs } = &out[0] else { panic!("{out:?}") };
        let want: Vec<f64> = (0..7).map(|i| (3 * i + 30) as f64).collect();
        assert_eq!((total, *secs), (&want, 1.5));
        assert!(matches!(&out[1], Output::Done(o) if o.clean));
    }

    #[test]
    fn a_silent_worker_fails_the_prelude_at_the_deadline_by_name() {
        let (mut root, mut workers) = star(10);
        drain(&mut root);
        root.handle(&At(0.0), Input::Contribution { value: vec![0.0; 4] });
        drain(&mut root);
        for w in [0, 2] {
            drain(&mut workers[w]);
            workers[w].handle(&At(0.0), Input::Contribution { value: vec![1.0; 4] });
            for o in drain(&mut workers[w]) {
                if let Output::Send { msg, track: Some(track), .. } = o {
                    root.handle(&At(0.1), Input::Recv { from: w + 1, msg });
                    workers[w].handle(&At(0.1), Input::Sent { track });
                }
            }
        }
        assert!(drain(&mut root).is_empty(), "worker 2 has not contributed");
        root.handle(&At(5.0), Input::Timer { id: DEADLINE });
        let out = drain(&mut root);
        let Some(Output::Done(o)) = out.last() else { panic!("{out:?}") };
        let Err(Failure::Prelude { missing, message }) = &o.result else { panic!("{o:?}") };
        assert_eq!(missing, &[2]);
        assert!(
            message.starts_with("no contribution from worker(s) 2 (rank 2) within run.deadline = 5 s"),
            "{message}"
        );
    }
}
