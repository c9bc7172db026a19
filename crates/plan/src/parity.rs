//! CodedFedL's parity data and allocation, as the plan carries them (built by
//! `schemes/codedfedl.rs`): the clients encode their rows once, the server computes on the sum.

use outrun_config::{ComputeMode, Generator};
use serde::{Deserialize, Serialize};

use crate::alloc::WeightedSet;
use crate::stragglers::StragglerModel;

/// CodedFedL's parity data and allocation, as the plan carries them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parity {
    /// Parity rows u (the server's part).
    pub u: usize,
    /// u_max = round(δ·m).
    pub u_max: usize,
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
    /// Every row of the client with its encoding weight: √(1 − P(T ≤ t*)) if sampled, 1 if not.
    pub rows: WeightedSet,
    /// ℓ*_j: rows it processes every round.
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
    /// Values of one client's upload: u rows of the model's inputs and outputs.
    pub fn upload_len(&self, inputs: usize, outputs: usize) -> usize {
        self.u * (inputs + outputs)
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
            "codedfedl: t* = {:.6} s ({}); u = {} of u_max = {} parity rows ({:?} G_j); expected return by t*: Σ ℓ*_j·P_j + u = {:.1} of m = {}\n",
            self.deadline,
            if self.optimised { "optimised" } else { "scheme.deadline" },
            self.u,
            self.u_max,
            self.generator,
            self.expected_return(),
            samples
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
            "client", "rows", "load ℓ*", "P(T ≤ t*)", "weight", "E[T] s", "μ points/s", "α"
        );
        for (k, c) in self.clients.iter().enumerate() {
            o += &format!(
                "  {:>6} {:>6} {:>7} {:>10.4} {:>8.4} {:>12.6} {:>12.4} {:>6.3}\n",
                k + 1,
                c.rows.len(),
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

    /// The expected points returned by t*: Σ_j ℓ*_j·P(T_j ≤ t*) + u.
    pub fn expected_return(&self) -> f64 {
        self.clients.iter().map(|c| c.load as f64 * c.p_return).sum::<f64>() + self.u as f64
    }
}
