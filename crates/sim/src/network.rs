//! The network model: every message costs `latency + bytes / rate`, where the rate is the
//! slower of the two NICs; each node sends one message at a time and receives one message at a
//! time (the papers' single-port model, full duplex). A message starts when it is ready and
//! both the sender's send port and the receiver's receive port are free; among the messages
//! that could start, the one that became ready first goes first, so a busy receiver queues them.
//!
//! Every message sent crosses the link, as in the MPI engine. The papers' model, where late
//! results cost nothing, is a protocol setting (`engine.upload = "granted"`), not a network one.

use outrun_plan::NetworkSpec;

struct Pending<P> {
    ready: f64,
    seq: u64,
    from: usize,
    to: usize,
    bytes: usize,
    payload: P,
    /// Delivered to the sender when the transmission ends.
    sent: Option<P>,
}

/// What the caller must schedule.
pub enum NetEvent<P> {
    /// The message arrives (at the given time).
    Deliver(P),
    /// A port frees up: call [`Network::pump`] then.
    Free,
}

/// Per-rank NIC rates, port occupancy, queued messages and byte counters.
pub struct Network<P> {
    rate: Vec<f64>,
    latency: f64,
    /// Whether model messages (down the tree) cost time and occupy ports.
    downlink: bool,
    send_busy: Vec<f64>,
    recv_busy: Vec<f64>,
    pending: Vec<Pending<P>>,
    seq: u64,
    /// Bytes sent per rank.
    pub sent_bytes: Vec<u64>,
    /// Bytes received per rank.
    pub recv_bytes: Vec<u64>,
    /// Messages sent per rank.
    pub sent_msgs: Vec<u64>,
    /// Messages received per rank.
    pub recv_msgs: Vec<u64>,
}

impl<P> Network<P> {
    /// The plan's network model for `ranks` ranks (absent bandwidth means infinite).
    pub fn of(spec: &NetworkSpec, ranks: usize) -> Self {
        Self::new(spec.rates(ranks), spec.latency, spec.downlink)
    }

    /// Per-rank rates (bytes/s), a latency (s), and whether down messages cost time.
    pub fn new(rate: Vec<f64>, latency: f64, downlink: bool) -> Self {
        let r = rate.len();
        Network {
            rate,
            latency,
            downlink,
            send_busy: vec![0.0; r],
            recv_busy: vec![0.0; r],
            pending: Vec::new(),
            seq: 0,
            sent_bytes: vec![0; r],
            recv_bytes: vec![0; r],
            sent_msgs: vec![0; r],
            recv_msgs: vec![0; r],
        }
    }

    fn count(&mut self, from: usize, to: usize, bytes: usize) {
        self.sent_bytes[from] += bytes as u64;
        self.recv_bytes[to] += bytes as u64;
        self.sent_msgs[from] += 1;
        self.recv_msgs[to] += 1;
    }

    /// Send `bytes` from `from` to `to` at time `now` (`down`: a model message). Returns what to
    /// schedule.
    pub fn submit(
        &mut self,
        from: usize,
        to: usize,
        bytes: usize,
        now: f64,
        down: bool,
        payload: P,
    ) -> Vec<(f64, NetEvent<P>)> {
        self.submit_notify(from, to, bytes, now, down, payload, None)
    }

    /// [`Network::submit`], also delivering `sent` (to the sender) when the last byte has left
    /// its port.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_notify(
        &mut self,
        from: usize,
        to: usize,
        bytes: usize,
        now: f64,
        down: bool,
        payload: P,
        sent: Option<P>,
    ) -> Vec<(f64, NetEvent<P>)> {
        self.submit_held(from, to, bytes, now, now, down, payload, sent)
    }

    /// [`Network::submit_notify`] of a message the sender holds until `ready` (a slow link's
    /// transmissions: `[links] model = "delay"`); its port stays free meanwhile.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_held(
        &mut self,
        from: usize,
        to: usize,
        bytes: usize,
        now: f64,
        ready: f64,
        down: bool,
        payload: P,
        sent: Option<P>,
    ) -> Vec<(f64, NetEvent<P>)> {
        if down && !self.downlink {
            self.count(from, to, bytes);
            let mut out = vec![(ready + self.latency, NetEvent::Deliver(payload))];
            out.extend(sent.map(|s| (ready, NetEvent::Deliver(s))));
            return out;
        }
        self.seq += 1;
        self.pending.push(Pending { ready, seq: self.seq, from, to, bytes, payload, sent });
        let mut out = self.pump(now);
        if ready > now {
            out.push((ready, NetEvent::Free));
        }
        out
    }

    /// Start every queued message that can start at `now`.
    pub fn pump(&mut self, now: f64) -> Vec<(f64, NetEvent<P>)> {
        let mut out = Vec::new();
        loop {
            let pick = self
                .pending
                .iter()
                .enumerate()
                .filter(|(_, m)| m.ready <= now && self.send_busy[m.from] <= now && self.recv_busy[m.to] <= now)
                .min_by(|(_, a), (_, b)| a.ready.total_cmp(&b.ready).then(a.seq.cmp(&b.seq)))
                .map(|(i, _)| i);
            let Some(i) = pick else { break };
            let m = self.pending.swap_remove(i);
            let rate = self.rate[m.from].min(self.rate[m.to]);
            let dur = if rate.is_infinite() { 0.0 } else { m.bytes as f64 / rate };
            self.send_busy[m.from] = now + dur;
            self.recv_busy[m.to] = now + dur;
            self.count(m.from, m.to, m.bytes);
            if dur > 0.0 {
                out.push((now + dur, NetEvent::Free));
            }
            if let Some(s) = m.sent {
                out.push((now + dur, NetEvent::Deliver(s)));
            }
            out.push((now + dur + self.latency, NetEvent::Deliver(m.payload)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive the network alone: deliver times of messages submitted at the given times.
    fn run(n: &mut Network<u32>, msgs: &[(usize, usize, usize, f64)]) -> Vec<(u32, f64)> {
        let mut q = crate::queue::Queue::new();
        let mut out = vec![];
        let mut subs: Vec<(f64, usize)> = msgs.iter().enumerate().map(|(i, m)| (m.3, i)).collect();
        subs.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (at, i) in subs {
            q.push(at, Err(i));
        }
        while let Some((at, e)) = q.pop() {
            let evs = match e {
                Err(i) => {
                    let (f, t, b, _) = msgs[i];
                    n.submit(f, t, b, at, false, i as u32)
                }
                Ok(None) => n.pump(at),
                Ok(Some(p)) => {
                    out.push((p, at));
                    vec![]
                }
            };
            for (when, ev) in evs {
                q.push(
                    when,
                    Ok(match ev {
                        NetEvent::Deliver(p) => Some(p),
                        NetEvent::Free => None,
                    }),
                );
            }
        }
        out.sort_by_key(|a| a.0);
        out
    }

    #[test]
    fn a_busy_receiver_serialises_messages() {
        // 1000 B/s, 100-byte messages: 0.1 s each, latency 0.01 s
        let mut n = Network::new(vec![1000.0; 4], 0.01, true);
        let got =
            run(&mut n, &[(1, 0, 100, 0.0), (2, 0, 100, 0.0), (3, 0, 100, 0.05), (0, 1, 100, 0.0), (0, 2, 100, 0.0)]);
        let at = |p: u32| got.iter().find(|g| g.0 == p).unwrap().1;
        assert!((at(0) - 0.11).abs() < 1e-12);
        assert!((at(1) - 0.21).abs() < 1e-12, "queued behind the first");
        assert!((at(2) - 0.31).abs() < 1e-12, "ready later, served after both");
        assert!((at(3) - 0.11).abs() < 1e-12, "full duplex: sending does not wait for receiving");
        assert!((at(4) - 0.21).abs() < 1e-12, "one send at a time");
        assert_eq!(n.recv_bytes[0], 300);
    }

    #[test]
    fn free_downlink_and_heterogeneous_rates() {
        let mut n: Network<u32> = Network::new(vec![1000.0, 100.0, 1000.0], 0.0, false);
        let ev = n.submit(0, 1, 100, 1.0, true, 7);
        assert!(matches!(ev[..], [(t, NetEvent::Deliver(7))] if t == 1.0));
        let got = run(&mut n, &[(0, 1, 100, 1.0)]);
        assert!((got[0].1 - 2.0).abs() < 1e-12, "the slower NIC sets the rate");
    }
}
