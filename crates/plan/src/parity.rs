//! CodedFedL's parity data and allocation, as the plan carries them (built by
//! `schemes/codedfedl.rs`): the clients encode each global mini-batch's rows once, the server
//! computes on the sums.

use outrun_config::{ComputeMode, Generator};
use serde::{Deserialize, Serialize};

use crate::alloc::WeightedSet;
use crate::stragglers::StragglerModel;

/// The generator of a client's private draw for global mini-batch `b` of `batches` (its sample,
/// its G_j): `key` itself with one batch (the draws of the runs before `scheme.batches`), `key`
/// and b with more.
pub fn batch_rng(key: &[u64], b: usize, batches: usize) -> outrun_codes::Rng {
    if batches == 1 {
        outrun_codes::Rng::from_key(key)
    } else {
        outrun_codes::Rng::from_key(&[key, &[b as u64]].concat())
    }
}

/// CodedFedL's parity data and allocation, as the plan carries them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parity {
    /// Parity rows u of each global mini-batch (the server's part holds B·u: batch b's are
    /// points d + b·u … d + (b + 1)·u − 1).
    pub u: usize,
    /// u_max = round(δ·m/B).
    pub u_max: usize,
    /// Global mini-batches B (`scheme.batches`): round t trains on batch t mod B.
    pub batches: usize,
    /// The entries of the G_j.
    pub generator: Generator,
    /// The deadline t*, seconds after a round starts.
    pub deadline: f64,
    /// Whether t* was optimised (false: `scheme.deadline`).
    pub optimised: bool,
    /// Cost of one point in units of a point of a linear model on the data's features.
    pub work: f64,
    /// Per client (index k: worker k + 1).
    pub clients: Vec<ClientParity>,
}

/// One client's share of the allocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientParity {
    /// Every row of the client with its encoding weight (√(1 − P(T ≤ t*)) if sampled, 1 if
    /// not), batch by batch: batch b's are the `batch_len[b]` rows after those of the batches
    /// before it.
    pub rows: WeightedSet,
    /// The client's rows in each global mini-batch.
    pub batch_len: Vec<usize>,
    /// ℓ*_j: rows it processes every round (at most its rows in the round's batch).
    pub load: usize,
    /// P(T_j ≤ t*) at that load.
    pub p_return: f64,
    /// E\[T_j\] at that load, seconds.
    pub mean_time: f64,
    /// μ_j (points per second) and α_j of its compute law.
    pub mu: f64,
    /// See `mu`.
    pub alpha: f64,
}

impl Parity {
    /// Values of one client's upload: B·u rows of the model's inputs and outputs (u per batch).
    pub fn upload_len(&self, inputs: usize, outputs: usize) -> usize {
        self.batches * self.u * (inputs + outputs)
    }

    /// The global mini-batch of round `t`.
    pub fn batch_of(&self, t: u64) -> usize {
        (t % self.batches.max(1) as u64) as usize
    }

    /// Client `k`'s (0-based) rows in batch `b` with their encoding weights.
    pub fn client_batch(&self, k: usize, b: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let c = &self.clients[k];
        let before: usize = c.batch_len[..b].iter().sum();
        c.rows.points().skip(before).take(c.batch_len[b])
    }

    /// The data rows of batch `b` (every client's).
    pub fn batch_size(&self, b: usize) -> usize {
        self.clients.iter().map(|c| c.batch_len[b]).sum()
    }

    /// Every point of batch `b`, ascending: the clients' rows in it, then its u parity rows
    /// (points from `samples` on).
    pub fn batch_points(&self, b: usize, samples: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.clients.len()).flat_map(|k| self.client_batch(k, b).map(|(i, _)| i)).collect();
        v.sort_unstable();
        v.extend(samples + b * self.u..samples + (b + 1) * self.u);
        v
    }

    /// The server's seconds per round on its u parity rows (modelled timing: `timing.master_a`,
    /// else `timing.a`, per unit of work; None when compute time is measured).
    pub fn server_time(&self, model: &StragglerModel) -> Option<f64> {
        (model.compute == ComputeMode::Modelled)
            .then(|| model.master_a.unwrap_or(model.base_a) * self.u as f64 * self.work)
    }

    /// `outrun plan`'s lines: the deadline, the parity, each client's share.
    pub fn describe(&self, samples: usize, model: &StragglerModel) -> String {
        let mut o = format!(
            "codedfedl: t* = {:.6} s ({}); u = {} of u_max = {} parity rows{} ({:?} G_j); expected return by t*: Σ ℓ*_j·P_j + u = {:.1} of m = {}\n",
            self.deadline,
            if self.optimised { "optimised" } else { "scheme.deadline" },
            self.u,
            self.u_max,
            if self.batches > 1 { " per global mini-batch" } else { "" },
            self.generator,
            self.expected_return(),
            if self.batches > 1 {
                format!(
                    "{:.1} per global mini-batch (the {samples} rows in {} batches, each encoded once; round t trains on batch t mod {})",
                    samples as f64 / self.batches as f64,
                    self.batches,
                    self.batches
                )
            } else {
                samples.to_string()
            }
        );
        if let Some(s) = self.server_time(model) {
            o += &format!(
                "  the server's parity gradient takes {s:.6} s; expected time per round {:.6} s{}\n",
                s.max(self.deadline),
                if s > self.deadline { " (longer than t*: lower timing.master_a or u)" } else { " (t*)" }
            );
        }
        o += &format!(
            "  {:>6} {:>6} {:>7} {:>10} {:>8} {:>12} {:>12} {:>6}\n",
            "client",
            if self.batches > 1 { "rows/b" } else { "rows" },
            "load ℓ*",
            "P(T ≤ t*)",
            "weight",
            "E[T] s",
            "μ points/s",
            "α"
        );
        for (k, c) in self.clients.iter().enumerate() {
            o += &format!(
                "  {:>6} {:>6} {:>7} {:>10.4} {:>8.4} {:>12.6} {:>12.4} {:>6.3}\n",
                k + 1,
                c.batch_len.iter().max().copied().unwrap_or(0),
                c.load,
                c.p_return,
                (1.0 - c.p_return).max(0.0).sqrt(),
                c.mean_time,
                c.mu,
                c.alpha
            );
        }
        o
    }

    /// The expected points returned by t* in a round: Σ_j ℓ*_j·P(T_j ≤ t*) + u.
    pub fn expected_return(&self) -> f64 {
        self.clients.iter().map(|c| c.load as f64 * c.p_return).sum::<f64>() + self.u as f64
    }
}
