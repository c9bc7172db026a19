//! Ring schemes: no master; every worker holds d/N points and the workers all-reduce their
//! gradients every iteration, then each applies the same update.
//!
//! - **`rar`**: our ring all-reduce: the vector is cut into N segments; N − 1 reduce-scatter
//!   steps (each worker sends one segment to its right neighbour and adds the one from its left)
//!   then N − 1 all-gather steps. Bandwidth-optimal, and it tolerates no stragglers.
//!   `scheme.algorithm` picks fewer, longer-range steps instead ([`RingAlgorithm`]): recursive
//!   doubling, halving-doubling, or `auto` by vector size.
//! - **`allreduce`**: the same training with `MPI_Allreduce`, as the reference.
//!
//! Worker w is rank w − 1, so straggler injection keyed by worker id matches the star schemes.

use crate::alloc::WeightedSet;
use crate::plan::{Node, Pattern, Plan};
use crate::schemes::plan;
use outrun_config::RingAlgorithm;
use outrun_config::{Config, SchemeConfig};

pub(crate) fn build(cfg: &Config, samples: usize) -> Plan {
    let n = cfg.workers();
    let collective = matches!(cfg.scheme, SchemeConfig::Allreduce(_));
    let nodes = WeightedSet::full(samples)
        .split_even(n)
        .into_iter()
        .enumerate()
        .map(|(rank, data)| Node::worker(rank, rank + 1, None, vec![data]))
        .collect();
    let title = if collective {
        "MPI_Allreduce of the workers' gradients (reference)".into()
    } else {
        "ring all-reduce of the workers' gradients".into()
    };
    let steps = match &cfg.scheme {
        SchemeConfig::Rar(c) => c.algorithm,
        _ => RingAlgorithm::Ring,
    };
    plan(cfg, title, samples, 0, Pattern::Ring { collective, steps }, nodes, vec![])
}
