//! Hierarchical aggregation (thesis ch. 6): `arc`, `amc`, `hier-uncoded` on the hierarchical
//! pattern — rank 0 the master, ranks 1..=n_h the helpers, ranks n_h + 1.. the clients (client
//! c is worker c, rank n_h + c). Each client holds a contiguous share of the data; what it
//! sends each helper, what each helper uploads and how the master decodes are the plan's `Hier` and `outrun_proto::roles::hier`.

use outrun_codes::hier::HierError;

use crate::alloc::WeightedSet;
use crate::plan::{Node, Pattern, Plan, SchemeData};
use crate::rules::{Hier, HierKind};
use crate::schemes::plan;
use outrun_config::{Config, ConfigError, HierConfig, SchemeConfig};

/// Worst condition number accepted for AMC's k × k decoding systems.
const MAX_COND: f64 = 1e8;

pub(crate) fn build(cfg: &Config, c: &HierConfig, samples: usize) -> Result<Plan, ConfigError> {
    let kind = match cfg.scheme {
        SchemeConfig::Arc(_) => HierKind::Arc,
        SchemeConfig::Amc(_) => HierKind::Amc,
        _ => HierKind::Uncoded,
    };
    let hier = Hier::new(kind, c.clients, c.helpers, c.s).map_err(|e| match e {
        HierError::NotDivisible(..) | HierError::TooManyFailures(..) => ConfigError::new("scheme.s", e.to_string()),
        other => ConfigError::new("scheme", other.to_string()),
    })?;
    if let Some(code) = &hier.code {
        let profile = code.profile(c.s, 20_000, cfg.run.seed);
        if profile.worst_cond > MAX_COND || profile.decodable < profile.sets {
            return Err(ConfigError::new(
                "scheme.helpers",
                format!("= {}: AMC's code is ill-conditioned at k = {} (worst κ {:.1e} > {MAX_COND:.0e} over {} sets of helpers); use fewer helpers or a larger s", c.helpers, hier.k, profile.worst_cond, profile.sets),
            ));
        }
    }
    // θ reaches client c through helper (c − 1) mod n_h + 1: its parent in the plan (the
    // chapter leaves the downlink open); its slices go to every helper
    let model_helper = |i: usize| i % c.helpers + 1;
    let client_rank = |i: usize| c.helpers + 1 + i;
    let mut nodes = vec![Node::new(0).relaying((1..=c.helpers).collect())];
    nodes.extend((1..=c.helpers).map(|h| {
        let clients = (0..c.clients).filter(|&i| model_helper(i) == h).map(client_rank).collect();
        Node::new(h).below(Some(0)).relaying(clients)
    }));
    for (i, part) in WeightedSet::full(samples).split_even(c.clients).into_iter().enumerate() {
        nodes.push(Node::worker(client_rank(i), i + 1, Some(model_helper(i)), vec![part]));
    }
    let title = match kind {
        HierKind::Arc => format!("aligned repetition coding (ARC): k = {} parts, each on s + 1 = {} helpers; every helper uploads one sum of the parts it is assigned", hier.k, c.s + 1),
        HierKind::Amc => format!("aligned MDS coding (AMC): k = n_h − s = {} parts, systematic MDS (Cauchy parity) across the {} helpers; the largest block of clients with the same failed links is summed and decoded once, the others forwarded", hier.k, c.helpers),
        HierKind::Uncoded => "uncoded hierarchical forwarding: every client's gradient to every helper, the first that received it forwards it".into(),
    };
    let mut p = plan(cfg, title, samples, c.s, Pattern::Hier { clients: c.clients, helpers: c.helpers }, nodes, vec![]);
    p.data = SchemeData::Hier(hier);
    Ok(p)
}
