//! One clock for all ranks: each rank measures its offset to the master's clock at start-up
//! (ping-pong, keeping the sample with the smallest round trip) and logs every timestamp on the
//! master's timeline, in seconds since the master's start.

use std::sync::Arc;
use std::time::Instant;

use crate::transport::{Comm, CLOCK};

/// Seconds on the master's timeline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    epoch: Instant,
    /// local − master, in seconds.
    pub offset: f64,
    /// Round trip of the best sync sample (an error bound on `offset` is half of it).
    pub rtt: f64,
}

impl Clock {
    /// A clock starting now, not yet synchronised.
    pub(crate) fn start() -> Self {
        Clock { epoch: Instant::now(), offset: 0.0, rtt: 0.0 }
    }

    fn local(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    /// Now, on the master's timeline.
    pub(crate) fn now(&self) -> f64 {
        self.local() - self.offset
    }

    /// Collective: rank 0 measures every other rank's offset and tells it.
    pub(crate) fn sync(&mut self, comm: &mut Comm) {
        const ROUNDS: usize = 8;
        if comm.rank == 0 {
            for r in 1..comm.size {
                let mut best = (f64::INFINITY, 0.0);
                for _ in 0..ROUNDS {
                    let t0 = self.local();
                    comm.isend_words(r, CLOCK, Arc::new(vec![0.0, t0]), 16);
                    let reply = comm.recv_blocking(r, CLOCK, 200, "answer the clock synchronisation");
                    let t1 = self.local();
                    let rtt = t1 - t0;
                    if rtt < best.0 {
                        best = (rtt, reply.words[1] - 0.5 * (t0 + t1));
                    }
                }
                comm.isend_words(r, CLOCK, Arc::new(vec![1.0, best.1, best.0]), 24);
            }
        } else {
            loop {
                let m = comm.recv_blocking(0, CLOCK, 200, "answer the clock synchronisation");
                if m.words[0] == 0.0 {
                    let t = self.local();
                    comm.isend_words(0, CLOCK, Arc::new(vec![0.0, t]), 16);
                } else {
                    self.offset = m.words[1];
                    self.rtt = m.words[2];
                    break;
                }
            }
        }
        comm.flush_sends(std::time::Duration::from_secs(30), |_| {});
    }
}

impl outrun_proto::Clock for Clock {
    fn now(&self) -> f64 {
        Clock::now(self)
    }
}
