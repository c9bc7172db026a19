//! Federated schemes on a star: the master is the server, the N workers are the clients.
//!
//! Client k holds the k-th of N near-equal contiguous blocks of the rows (non-IID shards with
//! `data.order = "by-label"`, the rows sorted by label first, or `"shards"`, label-sorted
//! shards dealt by the seed). Every round the server sends θ,
//! each client uploads its local update (`job.kind = "fl"`), and the server's rule
//! ([`FlRule`](crate::FlRule), executed in `outrun_proto::roles`) turns the first `wait` uploads into its step. DiverseFL's
//! server computes a guiding update per client on a sample of that client's block (its parts:
//! the clients' blocks, sampled), FLTrust's one update on a sample of the whole training set.

use crate::alloc::{split_sizes, Segment, WeightedSet};
use crate::plan::Plan;
use crate::rules::{Encoding, FlRule, Rule};
use crate::schemes::{star, worker};
use outrun_config::{Config, FederatedConfig, SchemeConfig};

/// The rule of `cfg`'s federated scheme.
fn rule(cfg: &Config, c: &FederatedConfig) -> FlRule {
    let f = c.f();
    match cfg.scheme {
        SchemeConfig::Fedavg(_) => FlRule::Mean,
        SchemeConfig::Oracle(_) => FlRule::Oracle,
        SchemeConfig::Diversefl(_) => FlRule::Diversefl { eps1: c.eps1, eps2: c.eps2, eps3: c.eps3 },
        SchemeConfig::Median(_) => FlRule::Median,
        SchemeConfig::Krum(_) => FlRule::Krum { f, m: 1 },
        SchemeConfig::MultiKrum(_) => FlRule::Krum { f, m: c.select.unwrap_or(c.need(cfg.per_round()) - f) },
        SchemeConfig::Bulyan(_) => FlRule::Bulyan { f },
        SchemeConfig::Resampling(_) => FlRule::Resampling { s: c.resample },
        SchemeConfig::Fltrust(_) => FlRule::Fltrust,
        _ => unreachable!("{} is not a federated scheme", cfg.scheme.kind()),
    }
}

pub(crate) fn build(cfg: &Config, c: &FederatedConfig, samples: usize) -> Plan {
    let n = c.workers;
    let how = rule(cfg, c);
    let blocks: Vec<WeightedSet> = split_sizes(samples, n)
        .into_iter()
        .scan(0, |start, len| {
            let mut set = WeightedSet::default();
            set.push(Segment { start: *start, len, coef: 1.0 });
            *start += len;
            Some(set)
        })
        .collect();
    let server_parts = match how {
        FlRule::Diversefl { .. } => blocks.clone(),
        FlRule::Fltrust => vec![WeightedSet::full(samples)],
        _ => vec![],
    };
    let sampled = match how {
        FlRule::Diversefl { .. } => format!("; the server holds {} of each client's rows", c.sample),
        FlRule::Fltrust => format!("; the server's root set is {} of the rows", c.sample),
        _ => String::new(),
    };
    let per_round = cfg.per_round();
    let need = c.need(per_round);
    let rule = Rule::Federated { need, how, per_round, by: c.wait_s };
    let round = per_round.map_or(String::new(), |k| format!(", {k} sampled per round"));
    let title = format!("federated, {n} clients{round}: {}{sampled}", rule.describe(n));
    let send = if per_round.is_some() { Encoding::Sampled } else { Encoding::Plain };
    let clients = blocks.into_iter().enumerate().map(|(k, b)| worker(k + 1, vec![b], send)).collect();
    let mut plan = star(cfg, title, samples, n - need, clients, rule, vec![]);
    if !server_parts.is_empty() {
        plan.nodes[0].parts = server_parts;
        plan.nodes[0] = plan.nodes[0].clone().sampled(c.sample);
        plan.nodes[0].send = Encoding::Collected;
    }
    plan
}
