//! What the plan says each node waits for and sends: the data of the roles (`outrun_proto::roles`
//! executes them). A parent's [`Rule`] (with [`GroupSpec`]s and a federated [`FlRule`]), a
//! node's [`Encoding`], and a hierarchical scheme's parameters ([`Hier`]): pure descriptions,
//! serialised in the plan, built by the scheme builders (`schemes/`).

use outrun_codes::hier::{check_tolerance, Amc, Arc, FailureTable, HierError};
use outrun_codes::LinearCode;
use serde::{Deserialize, Serialize};

/// A group of consecutive children that decodes on its own (communication-efficient and
/// adaptive gradient codes): children `first .. first + size`, with the plan's code `code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupSpec {
    /// Index of the group's first child.
    pub first: usize,
    /// Children in the group.
    pub size: usize,
    /// Index into `Plan::codes` (a linear or an adaptive code).
    pub code: usize,
    /// Corrupted results the group locates and excludes (linear codes; `outrun_proto::roles`, robust.rs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub byzantine: usize,
}

/// A parent's wait rule, as stored in the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// Wait for every child; sum (uncoded).
    Sum,
    /// Use the first `need` children, summed and scaled by d / (points they cover): an estimate
    /// (ignore-stragglers), exact only when every child answered.
    Rescale {
        /// Children used.
        need: usize,
        /// Or, at this many seconds after the iteration starts, whatever has arrived (at least
        /// one): a deadline wait rule.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<f64>,
    },
    /// Any `need` children decode with the plan's code number `code` (least squares, residual
    /// checked): gradient coding, CodedReduce.
    Decode {
        /// Children needed.
        need: usize,
        /// Index into `Plan::codes`.
        code: usize,
        /// Corrupted results to locate and exclude (`scheme.byzantine`; `need` includes the 2f
        /// results this takes beyond decoding): see `outrun_proto::roles`, robust.rs.
        #[serde(default, skip_serializing_if = "is_zero")]
        byzantine: usize,
    },
    /// Groups of children, each decoding its part of the total as soon as what arrived is
    /// decodable (a rank test; several rounds for adaptive codes); the total is the sum of the
    /// groups' results, complete when every group has decoded.
    Groups {
        /// The groups.
        groups: Vec<GroupSpec>,
    },
    /// Clusters of children (GC-SC, GC-DC), each decoding its block from any ℓ − r + 1 of its
    /// members with the plan's cluster code `code`; the master may re-form the clusters every
    /// iteration and sends each child its codeword with the model.
    Clusters {
        /// Index into `Plan::codes` (a cluster code).
        code: usize,
    },
    /// Coded rows of a matrix–vector product (HCMM and its baselines): whole messages until
    /// the rows received determine y, then decode with the plan's rows code `code`.
    Rows {
        /// Index into `Plan::codes` (a rows code).
        code: usize,
    },
    /// Every child's result that arrives within `by` seconds of the iteration's start, summed
    /// unscaled (at least one: the first, if none has by then): CodedFedL, whose server adds its
    /// parity gradient in place of the results that miss the deadline. Never exact.
    Until {
        /// The deadline t*, seconds.
        by: f64,
    },
    /// A federated server: the first `need` uploads, turned into its step by `how`
    /// (`outrun_proto::roles`, federated.rs).
    Federated {
        /// Uploads used.
        need: usize,
        /// The aggregation rule.
        how: FlRule,
        /// Clients sampled per round (from `run.seed`; the others sit the round out).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_round: Option<usize>,
        /// Or, this many seconds after the round starts, whatever has arrived (at least one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<f64>,
    },
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

impl Rule {
    /// Number of children's results the rule needs (for descriptions).
    pub fn need(&self, children: usize) -> usize {
        match *self {
            Rule::Sum | Rule::Until { .. } | Rule::Groups { .. } | Rule::Clusters { .. } | Rule::Rows { .. } => {
                children
            }
            Rule::Rescale { need, .. } | Rule::Decode { need, .. } | Rule::Federated { need, .. } => need,
        }
    }

    /// `all 9, sum` / `first 7 of 9, decode`.
    pub fn describe(&self, children: usize) -> String {
        if let Rule::Groups { groups: g } = self {
            return format!("{} group(s), each until decodable", g.len());
        }
        if let Rule::Clusters { .. } = self {
            return "every cluster, decode".into();
        }
        if let Rule::Rows { .. } = self {
            return "rows until decodable".into();
        }
        if let Rule::Until { by } = self {
            return format!("what arrived of {children} by {by:.6} s (at least one), sum unscaled");
        }
        if let Rule::Federated { need, how, per_round, by } = self {
            let of = per_round.unwrap_or(children);
            return format!("first {need} of {of} uploads{}, {}", by_text(*by), how.describe());
        }
        let how = match self {
            Rule::Sum => "sum",
            Rule::Rescale { .. } => "rescale",
            Rule::Decode { byzantine: 0, .. } => "decode",
            Rule::Decode { byzantine: 1, .. } => "decode excluding a corrupted one",
            Rule::Decode { byzantine, .. } => {
                return format!(
                    "first {} of {children}, decode excluding up to {byzantine} corrupted",
                    self.need(children)
                )
            }
            Rule::Groups { .. }
            | Rule::Clusters { .. }
            | Rule::Rows { .. }
            | Rule::Federated { .. }
            | Rule::Until { .. } => unreachable!("handled above"),
        };
        let need = self.need(children);
        let by = by_text(if let Rule::Rescale { by, .. } = self { *by } else { None });
        if need == children {
            format!("all {children}{by}, {how}")
        } else {
            format!("first {need} of {children}{by}, {how}")
        }
    }

    /// Whether the combination is the exact quantity whenever the rule is met.
    pub fn exact_by_design(&self, children: usize) -> bool {
        match *self {
            Rule::Rescale { need, by } => need == children && by.is_none(),
            Rule::Until { .. } => false,
            _ => true,
        }
    }
}

/// ", or what arrived by 0.5 s" for a deadline wait rule.
fn by_text(by: Option<f64>) -> String {
    by.map_or(String::new(), |s| format!(", or what arrived by {s} s"))
}

/// How a node forms its message(s), as stored in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "encoding", rename_all = "kebab-case")]
pub enum Encoding {
    /// One message: the node's own part (if it computes one) plus its children's combination
    /// (if it has children). Every scheme so far.
    #[default]
    Plain,
    /// A federated client that may sit a round out: its one-byte assignment says whether the
    /// server sampled it (`job.clients_per_round`); if not it computes nothing and answers with an
    /// empty message.
    Sampled,
    /// The children's combination alone: the node's own parts are what its rule weighs the
    /// children's results against (a federated server's guiding updates), not part of the sum.
    Collected,
    /// One message of ⌈len/K⌉ values: the node's part cut into K chunks, combined with the
    /// coefficients of column `column` of the plan's linear code `code` (CommFR-GC).
    Chunked {
        /// Index into `Plan::codes` (a linear code).
        code: usize,
        /// The node's position in its group (the column of the generator).
        column: usize,
    },
    /// Up to L rounds of ⌈len/L⌉ values, round r combining the sub-vectors of the node's d
    /// parts with row r·n + `worker` of the adaptive code's B (AGC); sent one after the other,
    /// until the parent moves on.
    Rounds {
        /// Index into `Plan::codes` (an adaptive code).
        code: usize,
        /// The node's index j in its group.
        worker: usize,
    },
    /// One message: the codeword the parent assigned for the iteration, computed from the r
    /// mini-batches it needs among the n·ℓ the node stores (GC-DC).
    Clustered {
        /// Index into `Plan::codes` (a cluster code).
        code: usize,
        /// The worker's index (0-based) in the cluster matrix.
        worker: usize,
    },
}

/// How a federated server turns the uploads it uses into its step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum FlRule {
    /// The mean (FedAvg).
    Mean,
    /// The mean of the uploads of clients `[faults]` does not corrupt this round.
    Oracle,
    /// The mean of the uploads DiverseFL's filter accepts.
    Diversefl {
        /// sign(Δ̃ᵀz) must exceed it.
        eps1: f64,
        /// ‖z‖/‖Δ̃‖ must exceed it.
        eps2: f64,
        /// ‖z‖/‖Δ̃‖ must be below it.
        eps3: f64,
    },
    /// The coordinate-wise median.
    Median,
    /// The mean of the `m` uploads of lowest Krum score, assuming `f` faulty (Krum: m = 1).
    Krum {
        /// Faulty uploads assumed.
        f: usize,
        /// Uploads averaged.
        m: usize,
    },
    /// Bulyan, assuming `f` faulty.
    Bulyan {
        /// Faulty uploads assumed.
        f: usize,
    },
    /// The median of K means of `s` uploads each (every upload in `s` of them).
    Resampling {
        /// Uploads per group mean.
        s: usize,
    },
    /// FLTrust's weights against the server's root-set update.
    Fltrust,
}

impl FlRule {
    /// One line for plans and titles.
    pub fn describe(&self) -> String {
        match self {
            FlRule::Mean => "mean".into(),
            FlRule::Oracle => "mean of the clients that are not faulty".into(),
            FlRule::Diversefl { eps1, eps2, eps3 } => {
                format!("mean of those with sign(Δ̃ᵀz) > {eps1} and {eps2} < ‖z‖/‖Δ̃‖ < {eps3}")
            }
            FlRule::Median => "coordinate-wise median".into(),
            FlRule::Krum { f, m: 1 } => format!("Krum (f = {f})"),
            FlRule::Krum { f, m } => format!("mean of the {m} best by Krum's score (f = {f})"),
            FlRule::Bulyan { f } => format!("Bulyan (f = {f})"),
            FlRule::Resampling { s } => format!("median of means of {s} resampled uploads"),
            FlRule::Fltrust => "FLTrust weights against the server's root-set update".into(),
        }
    }
}

/// Which hierarchical scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HierKind {
    /// Aligned repetition coding.
    Arc,
    /// Aligned MDS coding.
    Amc,
    /// Forwarding, no code.
    Uncoded,
}

/// A hierarchical scheme's parameters: every rank builds the same combinations from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hier {
    /// The scheme.
    pub kind: HierKind,
    /// Clients n_e.
    pub clients: usize,
    /// Helpers n_h.
    pub helpers: usize,
    /// Failed links tolerated per client.
    pub s: usize,
    /// Parts k of a client's payload.
    pub k: usize,
    /// AMC's k × n_h generator (column j: helper j's coefficients of the parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<LinearCode>,
}

/// Per helper, the sets of clients whose slices it sums, one upload of P values each, in order.
pub type Uploads = Vec<Vec<Vec<usize>>>;

impl Hier {
    /// Most clients: a helper's report and the master's instructions list them in a message
    /// header, which must stay below 64 KiB (`outrun_proto::wire`; an instruction naming every
    /// client alone is 12·n_e + 16 bytes).
    pub const MAX_CLIENTS: usize = 4096;

    /// The scheme of `kind` for `clients` clients and `helpers` helpers tolerating `s` failed
    /// links per client.
    pub fn new(kind: HierKind, clients: usize, helpers: usize, s: usize) -> Result<Self, HierError> {
        let (k, code) = match kind {
            HierKind::Arc => (Arc::new(helpers, s)?.k, None),
            HierKind::Amc => {
                let k = Amc::new(helpers, s)?.k;
                (k, Some(LinearCode::systematic(helpers, k).expect("1 ≤ k ≤ n_h")))
            }
            HierKind::Uncoded if s >= helpers => return Err(HierError::TooManyFailures(s, helpers)),
            HierKind::Uncoded => (1, None),
        };
        Ok(Hier { kind, clients, helpers, s, k, code })
    }

    /// Values of one slice (and of one upload) for payloads of `len` values: ⌈len/k⌉.
    pub fn part(&self, len: usize) -> usize {
        len.div_ceil(self.k)
    }

    /// Part `r` of a payload of `len` values: (offset, values), the last one possibly short.
    pub fn range(&self, r: usize, len: usize) -> (usize, usize) {
        let p = self.part(len);
        let from = (r * p).min(len);
        (from, p.min(len - from))
    }

    /// The first k helpers (0-based) whose link from a client with failed links `failed` works.
    pub fn first_k(&self, failed: &[usize]) -> Vec<usize> {
        (0..self.helpers).filter(|h| !failed.contains(h)).take(self.k).collect()
    }

    /// What each helper uploads for the failure table (each client's failed helpers, 0-based),
    /// or why it cannot be served (a client with more than s failed links).
    pub fn uploads(&self, table: &FailureTable) -> Result<Uploads, HierError> {
        check_tolerance(table, self.s)?;
        let mut up: Uploads = vec![vec![]; self.helpers];
        match self.kind {
            HierKind::Arc => {
                let assignment = Arc::new(self.helpers, self.s)?.assignment(table)?;
                let mut sums = vec![vec![]; self.helpers];
                for (client, parts) in assignment.iter().enumerate() {
                    parts.iter().for_each(|&h| sums[h].push(client));
                }
                for (h, set) in sums.into_iter().enumerate().filter(|(_, set)| !set.is_empty()) {
                    up[h].push(set);
                }
            }
            HierKind::Amc => {
                let block = Amc::new(self.helpers, self.s)?.largest_block(table);
                for h in self.first_k(&table[block[0]]) {
                    up[h].push(block.clone());
                }
                for client in (0..table.len()).filter(|c| !block.contains(c)) {
                    self.first_k(&table[client]).into_iter().for_each(|h| up[h].push(vec![client]));
                }
            }
            HierKind::Uncoded => {
                for (client, failed) in table.iter().enumerate() {
                    up[self.first_k(failed)[0]].push(vec![client]);
                }
            }
        }
        Ok(up)
    }

    /// C_EH: values a client sends over k·P (n_h/k).
    pub fn c_eh(&self) -> f64 {
        self.helpers as f64 / self.k as f64
    }

    /// C_HM of the uploads: sums uploaded over k.
    pub fn c_hm(&self, uploads: &Uploads) -> f64 {
        uploads.iter().map(Vec::len).sum::<usize>() as f64 / self.k as f64
    }

    /// Expected C_HM over the failure tables with exactly s failed links per client, uniform:
    /// (value, how it was obtained).
    pub fn expected_c_hm(&self) -> (f64, String) {
        let (n, h, s) = (self.clients, self.helpers, self.s);
        match self.kind {
            HierKind::Uncoded => (n as f64, "every client forwarded".into()),
            HierKind::Arc => match outrun_codes::hier::averages(n, h, s) {
                Some((Some(f), _)) => (f.value(), format!("{f}, exact over every table")),
                _ => (outrun_codes::hier::arc_average(n, h, s), "closed form".into()),
            },
            HierKind::Amc => match outrun_codes::hier::averages(n, h, s) {
                Some((_, f)) => (f.value(), format!("{f}, exact over every table")),
                None => (outrun_codes::hier::amc_average(n, h, s), "n_e + 1 − E[M], exact".into()),
            },
        }
    }
}
