//! PageRank over K servers with computation load r (thesis chapter 2): `coded-pagerank`
//! multicasts XORs of byte segments in the C(K, r+1) groups, `uncoded-pagerank` sends the same
//! segments uncoded to their owners (r = 1: conventional PageRank). The allocation and the codec
//! are `outrun_codes::ShuffleNode`; the plan only names the pattern, since the allocation is a
//! function of (n, K, r, policy) every rank computes itself.

use crate::alloc::WeightedSet;
use crate::plan::{Node, Pattern, Plan};
use crate::schemes::plan;
use outrun_config::{Config, SchemeConfig, ShuffleConfig};

pub(crate) fn build(cfg: &Config, c: &ShuffleConfig, vertices: usize) -> Plan {
    let coded = matches!(cfg.scheme, SchemeConfig::CodedPagerank(_));
    let k = c.servers;
    let nodes = WeightedSet::full(vertices)
        .split_even(k)
        .into_iter()
        .enumerate()
        .map(|(rank, reduced)| Node::worker(rank, rank + 1, None, vec![reduced]))
        .collect();
    let title = match (coded, c.r) {
        (true, _) => format!("coded PageRank: Map r = {} times, XOR-coded multicast Shuffle, Reduce", c.r),
        (false, 1) => "conventional PageRank (r = 1): uncoded Shuffle".to_string(),
        (false, r) => format!("PageRank with load r = {r} and an uncoded Shuffle"),
    };
    let pattern =
        Pattern::Shuffle { servers: k, r: c.r, coded, reduce: c.reduce, schedule: c.shuffle, multicast: c.multicast };
    plan(cfg, title, vertices, 0, pattern, nodes, vec![])
}
