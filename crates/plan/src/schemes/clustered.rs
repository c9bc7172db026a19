//! Gradient coding with clusters (Buyukates, Ozfatura, Ulukus, Gündüz; notes `seed-002-gcdc.md`).
//!
//! The data set is cut into K near-equal contiguous mini-batches; block p is mini-batches
//! pℓ .. pℓ + ℓ − 1. Cluster p runs an ℓ-worker cyclic gradient code B (Tandon et al., s = r − 1,
//! best of `draws`) over its block: the member at position i sends
//! `Σ_{u<r} B[i, i+u mod ℓ] · g_{block p, i+u mod ℓ}`, and the master decodes each cluster from
//! any ℓ − r + 1 of its positions and sums the clusters.
//!
//! - **`gc-sc`** (static clustering, CGC): the partition is the first ℓ rows of A_cluster; a
//!   worker holds its r mini-batches, pre-weighted (one part, like `gc-cyclic`).
//! - **`gc-dc`** (dynamic clustering): a worker holds the n·ℓ mini-batches of its n clusters (one
//!   part each) and computes, each iteration, the r of the codeword the master assigns it with
//!   the model; the master re-forms the clusters from the straggler states it believes
//!   (`outrun_codes::dynamic_clustering`).

use outrun_codes::{domain, ClusterMatrix, GradientCode, Rng};

use crate::alloc::{split_sizes, Segment, WeightedSet};
use crate::plan::{Plan, PlanCode};
use crate::rules::{Encoding, Rule};
use crate::schemes::{code_error, star, worker};
use outrun_config::{ClusterConfig, Config, ConfigError, SchemeConfig};

pub(crate) fn build(cfg: &Config, c: &ClusterConfig, samples: usize) -> Result<Plan, ConfigError> {
    let (k, p, r) = (c.workers, c.clusters, c.r);
    let ell = k / p;
    let dynamic = matches!(cfg.scheme, SchemeConfig::GcDc(_));
    let n = if dynamic { c.n } else { 1 };
    let matrix = ClusterMatrix::random(
        k,
        p,
        n,
        &mut Rng::from_key(&[cfg.run.seed, domain::CLUSTER, k as u64, p as u64, n as u64]),
    )
    .map_err(|e| ConfigError::new("scheme.clusters", e.to_string()))?;
    let (code, screening) = GradientCode::cyclic(ell, r - 1, cfg.run.seed, c.draws).map_err(code_error)?;
    // mini-batch b: a contiguous run of points
    let mut start = 0;
    let batches: Vec<WeightedSet> = split_sizes(samples, k)
        .into_iter()
        .map(|len| {
            let mut w = WeightedSet::default();
            w.push(Segment { start, len, coef: 1.0 });
            start += len;
            w
        })
        .collect();
    let block = |cluster: usize, j: usize| &batches[cluster * ell + j];
    let nodes = if dynamic {
        (0..k)
            .map(|w| {
                worker(
                    w + 1,
                    matrix
                        .eligible(w)
                        .iter()
                        .flat_map(|&q| (0..ell).map(move |j| (q, j)))
                        .map(|(q, j)| block(q, j).clone())
                        .collect(),
                    Encoding::Clustered { code: 1, worker: w },
                )
            })
            .collect()
    } else {
        let places = matrix.static_partition().positions(k);
        (0..k)
            .map(|w| {
                let (q, i) = places[w];
                let mut part = WeightedSet::default();
                for u in 0..r {
                    let j = (i + u) % ell;
                    part.extend(&block(q, j).scaled(code.b[(i, j)]));
                }
                worker(w + 1, vec![part], Encoding::Plain)
            })
            .collect()
    };
    let title = if dynamic {
        format!("gradient coding with dynamic clustering: {p} clusters of {ell}, re-formed every iteration; each needs {} of its members", ell - r + 1)
    } else {
        format!(
            "gradient coding with static clustering: {p} clusters of {ell}; each needs {} of its members",
            ell - r + 1
        )
    };
    let codes = vec![
        PlanCode::Gradient { code, screening: Some(screening), draws: c.draws },
        PlanCode::Clusters { matrix, r, code: 0, dynamic, ssi: c.ssi, capped: c.capped, order: c.order, tau: c.tau },
    ];
    Ok(star(cfg, title, samples, r - 1, nodes, Rule::Clusters { code: 1 }, codes))
}
