//! `[scheme]`: who holds what, what a parent waits for and how it decodes. Tagged by `kind`;
//! the plan builders are in `crate::schemes`.

use outrun_codes::ReducePolicy;
use serde::{Deserialize, Serialize};

use super::stragglers::PerWorker;
use super::tagged::{de, Tagged};
use super::{err, ConfigError};

/// How the ranks of a ring pattern all-reduce (`scheme.algorithm` of `rar`). Every schedule
/// leaves bit-identical totals on every rank: each value's final sum is formed on one rank and
/// copied to the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RingAlgorithm {
    /// Reduce-scatter then all-gather around the ring: 2(N − 1) steps of 1/N of the vector
    /// each, to the right neighbour (the papers' RAR).
    #[default]
    Ring,
    /// Recursive doubling: log2 N steps exchanging the whole vector with a partner (two more
    /// when N is not a power of two): the fewest steps, for short vectors.
    RecursiveDoubling,
    /// Rabenseifner's: reduce-scatter by recursive halving, all-gather by recursive doubling:
    /// 2 log2 N steps (two more when N is not a power of two) moving the ring's bytes.
    HalvingDoubling,
    /// By the vector's size, as MPI libraries switch: recursive doubling up to
    /// [`RingAlgorithm::AUTO_DOUBLING_BYTES`], halving-doubling up to
    /// [`RingAlgorithm::AUTO_RING_BYTES`], the ring above (the crossovers measured with
    /// `outrun bench ring`, docs/performance.md §2).
    Auto,
}

impl RingAlgorithm {
    /// Under `auto`, vectors up to this many bytes take recursive doubling.
    pub const AUTO_DOUBLING_BYTES: usize = 64 * 1024;
    /// Under `auto`, vectors up to this many bytes (and above the doubling's) take
    /// halving-doubling; longer ones the ring.
    pub const AUTO_RING_BYTES: usize = 1024 * 1024;

    /// The schedule a vector of `len` values takes (`auto` resolved).
    pub fn resolve(self, len: usize) -> RingAlgorithm {
        match (self, 8 * len) {
            (RingAlgorithm::Auto, b) if b <= Self::AUTO_DOUBLING_BYTES => RingAlgorithm::RecursiveDoubling,
            (RingAlgorithm::Auto, b) if b <= Self::AUTO_RING_BYTES => RingAlgorithm::HalvingDoubling,
            (RingAlgorithm::Auto, _) => RingAlgorithm::Ring,
            (a, _) => a,
        }
    }

    /// Every algorithm, in the order of their documentation.
    pub const ALL: [RingAlgorithm; 4] =
        [RingAlgorithm::Ring, RingAlgorithm::RecursiveDoubling, RingAlgorithm::HalvingDoubling, RingAlgorithm::Auto];

    /// The algorithm named `name` in configs.
    pub fn from_name(name: &str) -> Option<RingAlgorithm> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Its name in configs.
    pub fn name(self) -> &'static str {
        match self {
            RingAlgorithm::Ring => "ring",
            RingAlgorithm::RecursiveDoubling => "recursive-doubling",
            RingAlgorithm::HalvingDoubling => "halving-doubling",
            RingAlgorithm::Auto => "auto",
        }
    }
}

/// Gradient code used inside each sibling group of a CodedReduce tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CodeChoice {
    /// Tandon et al.'s cyclic repetition, random construction, best of `draws`.
    #[default]
    Cyclic,
    /// Fractional repetition ((s+1) | n).
    Frac,
}

/// Parameters of the master–worker and ring schemes (N workers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarConfig {
    /// Number of workers N.
    pub workers: usize,
    /// Stragglers tolerated (0 for the schemes that wait for everybody).
    #[serde(default)]
    pub s: usize,
    /// Random draws of a cyclic code; the best-conditioned one is used (gc-cyclic).
    #[serde(default = "default_draws")]
    pub draws: usize,
    /// Corrupted results the master locates and excludes (gc-cyclic, gc-frac): it needs
    /// s ≥ 2·byzantine and tolerates s − 2·byzantine stragglers besides.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub byzantine: usize,
    /// `ignore`: at this many seconds after an iteration starts, use whatever has arrived (at
    /// least one result), if the first N − s have not come before: a deadline wait rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_s: Option<f64>,
    /// `rar`: the all-reduce's schedule (ring, recursive-doubling, halving-doubling, auto).
    #[serde(default, skip_serializing_if = "is_ring")]
    pub algorithm: RingAlgorithm,
}

fn is_ring(a: &RingAlgorithm) -> bool {
    *a == RingAlgorithm::Ring
}

/// A deadline wait rule's seconds must be positive and finite.
fn check_wait_s(wait_s: Option<f64>) -> Result<(), ConfigError> {
    match wait_s {
        Some(w) if !(w.is_finite() && w > 0.0) => {
            err("scheme.wait_s", format!("= {w}: seconds after an iteration starts; must be positive"))
        }
        _ => Ok(()),
    }
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// `scheme.byzantine = f` needs `s ≥ 2f` (`per`: "" or " per parent").
fn check_byzantine(f: usize, s: usize, per: &str) -> Result<(), ConfigError> {
    if 2 * f > s {
        return err(
            "scheme.byzantine",
            format!("= {f}: locating {f} corrupted result(s) takes 2·{f} = {} results of redundancy{per}, but scheme.s = {s}; set s ≥ {} (s − 2·byzantine stragglers are then tolerated besides)", 2 * f, 2 * f),
        );
    }
    Ok(())
}

/// Parameters of the federated schemes: N clients, the server (rank 0) waiting for the first
/// `wait` uploads of a round, and what each rule needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederatedConfig {
    /// Number of clients N.
    pub workers: usize,
    /// Uploads a round uses: the first K to arrive (default: every client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<usize>,
    /// Or, at this many seconds after the round starts, whatever has arrived (at least one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_s: Option<f64>,
    /// Faulty uploads Krum, Multi-Krum and Bulyan assume among the K.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byzantine: Option<usize>,
    /// Updates Multi-Krum averages (default K − f).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<usize>,
    /// Fraction of each client's rows the server holds (DiverseFL), or of the training set
    /// (FLTrust's root set).
    #[serde(default = "default_sample")]
    pub sample: f64,
    /// DiverseFL's thresholds: accept iff sign(Δ̃ᵀz) > eps1 and eps2 < ‖z‖/‖Δ̃‖ < eps3.
    #[serde(default)]
    pub eps1: f64,
    /// See `eps1`.
    #[serde(default = "default_eps2")]
    pub eps2: f64,
    /// See `eps1`.
    #[serde(default = "default_eps3")]
    pub eps3: f64,
    /// Resampling: each upload enters this many of the K group means.
    #[serde(default = "default_resample")]
    pub resample: usize,
}

/// CodedFedL (thesis ch. 5): N clients and a server that computes on parity data the clients
/// upload once, and stops waiting at the optimised deadline t*.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodedfedlConfig {
    /// Number of clients N.
    pub workers: usize,
    /// Redundancy δ: the parity has at most u_max = round(δ·m) rows for the m points.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Parity rows u (default u_max: the server is reliable, as in the thesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parity: Option<usize>,
    /// The entries of the clients' private encoding matrices G_j.
    #[serde(default)]
    pub generator: Generator,
    /// The deadline t* in seconds, instead of the optimised one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<f64>,
    /// Global mini-batches B, each encoded and allocated on its own (the thesis's per-mini-batch
    /// encoding); round t trains on batch t mod B. 1 (one batch of every row) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<usize>,
}

/// Hierarchical aggregation (thesis ch. 6): `clients` reach the master through `helpers` edge
/// servers over links that may fail, up to `s` per client and iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HierConfig {
    /// Clients n_e (the workers: they hold the data and compute).
    pub clients: usize,
    /// Helpers n_h.
    pub helpers: usize,
    /// Failed client→helper links tolerated per client and iteration.
    pub s: usize,
}

impl HierConfig {
    /// Most clients: a helper's report and the master's instructions list them in a message
    /// header, which must stay below 64 KiB (`outrun_proto::wire`; an instruction naming every
    /// client alone is 12·n_e + 16 bytes).
    pub const MAX_CLIENTS: usize = 4096;

    fn validate(&self, kind: &str) -> Result<(), ConfigError> {
        let most = Self::MAX_CLIENTS;
        if self.clients == 0 || self.clients > most {
            return err("scheme.clients", format!("= {}: must be 1..={most}", self.clients));
        }
        if self.helpers == 0 || self.helpers > MAX_HELPERS {
            return err("scheme.helpers", format!("= {}: must be 1..={MAX_HELPERS}", self.helpers));
        }
        if self.s >= self.helpers {
            return err(
                "scheme.s",
                format!(
                    "= {}: must be less than scheme.helpers = {} (a client needs a link that works)",
                    self.s, self.helpers
                ),
            );
        }
        if kind == "arc" && !self.helpers.is_multiple_of(self.s + 1) {
            return err(
                "scheme.s",
                format!("= {}: arc needs s + 1 = {} to divide scheme.helpers = {} (each of n_h/(s+1) parts goes to s + 1 helpers); use amc", self.s, self.s + 1, self.helpers),
            );
        }
        Ok(())
    }
}

/// Most helpers of a hierarchical scheme (AMC's code is checked over every set of n_h − s).
const MAX_HELPERS: usize = 24;

/// Entries of CodedFedL's encoding matrices: zero mean, unit variance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generator {
    /// N(0, 1).
    #[default]
    Gaussian,
    /// ±1 with probability ½ each.
    Bernoulli,
}

fn default_delta() -> f64 {
    0.1
}

impl CodedfedlConfig {
    /// The section's own checks (`outrun codedfedl-load` applies them to its arguments too).
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_workers(self.workers)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return err("scheme.delta", format!("= {}: the redundancy δ = u_max/m must be in (0, 1)", self.delta));
        }
        if self.parity == Some(0) {
            return err("scheme.parity", "must be at least 1 parity row");
        }
        if self.batches == Some(0) {
            return err("scheme.batches", "= 0: must be at least 1 global mini-batch");
        }
        match self.deadline {
            Some(d) if !(d > 0.0 && d.is_finite()) => {
                err("scheme.deadline", format!("= {d}: must be a positive number of seconds"))
            }
            _ => Ok(()),
        }
    }
}

fn default_sample() -> f64 {
    0.01
}
fn default_eps2() -> f64 {
    0.5
}
fn default_eps3() -> f64 {
    2.0
}
fn default_resample() -> usize {
    2
}

impl FederatedConfig {
    /// Uploads a round uses (K) when `per_round` clients are sampled each round (None: all).
    pub fn need(&self, per_round: Option<usize>) -> usize {
        self.wait.unwrap_or(per_round.unwrap_or(self.workers))
    }

    /// Faulty uploads assumed (f; 0 when not set).
    pub fn f(&self) -> usize {
        self.byzantine.unwrap_or(0)
    }

    fn validate(&self, kind: &str) -> Result<(), ConfigError> {
        let n = self.workers;
        if n == 0 {
            return err("scheme.workers", "must be at least 1 client");
        }
        if n > MAX_WORKERS {
            return err("scheme.workers", format!("= {n}: at most {MAX_WORKERS} clients"));
        }
        check_wait_s(self.wait_s)?;
        let k = self.need(None);
        if k == 0 || k > n {
            return err("scheme.wait", format!("= {k}: a round uses between 1 and scheme.workers = {n} uploads"));
        }
        if !(self.sample > 0.0 && self.sample <= 1.0) {
            return err(
                "scheme.sample",
                format!("= {}: the fraction of data the server holds must be in (0, 1]", self.sample),
            );
        }
        let ordered = self.eps2 >= 0.0 && self.eps2 < self.eps3;
        if !ordered || !self.eps1.is_finite() {
            return err(
                "scheme.eps2",
                format!(
                    "= {}: DiverseFL accepts ‖z‖/‖Δ̃‖ in (eps2, eps3) = ({}, {}): need 0 ≤ eps2 < eps3",
                    self.eps2, self.eps2, self.eps3
                ),
            );
        }
        let f = self.f();
        let (least, why) = match kind {
            "krum" | "multi-krum" => (2 * f + 3, "Krum needs K ≥ 2f + 3 uploads"),
            "bulyan" => (4 * f + 3, "Bulyan needs K ≥ 4f + 3 uploads"),
            "resampling" if self.resample == 0 || self.resample > k => {
                return err(
                    "scheme.resample",
                    format!("= {}: each upload enters 1 to K = {k} group means", self.resample),
                )
            }
            _ => (1, ""),
        };
        if k < least {
            return err(
                "scheme.byzantine",
                format!("= {f}: {why} (here {least}), but a round uses K = {k} of {n} clients; assume fewer faulty clients or use more"),
            );
        }
        if let Some(m) = self.select {
            if m == 0 || m > k - f {
                return err("scheme.select", format!("= {m}: Multi-Krum averages 1 to K − f = {} updates", k - f));
            }
        }
        Ok(())
    }
}

/// Parameters of coded and uncoded PageRank: K servers (one MPI rank each, no master), each
/// vertex Mapped by r of them, Reducers contiguous or `i mod K`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShuffleConfig {
    /// Number of servers K.
    pub servers: usize,
    /// Computation load r: each vertex is Mapped by r servers (1 = conventional PageRank).
    #[serde(default = "one")]
    pub r: usize,
    /// Which server Reduces vertex i: `"contiguous"` (the thesis) or `"mod"` (i mod K).
    #[serde(default = "contiguous")]
    pub reduce: ReducePolicy,
    /// How the servers take the Shuffle's transfers: all at once (`"parallel"`, the default) or
    /// one at a time (`"turns"`, the thesis's EC2 runs).
    #[serde(default)]
    pub shuffle: ShuffleSchedule,
    /// How the coded Shuffle sends a group's coded message to its r other members: one
    /// `MPI_Ibcast` on the group's communicator (`"broadcast"`, the default, as the thesis's
    /// code; C(K, r+1) communicators are created at setup) or r point-to-point sends
    /// (`"unicasts"`: no communicators). The uncoded Shuffle always sends point to point.
    #[serde(default)]
    pub multicast: Multicast,
}

/// How the coded Shuffle delivers a multicast group's coded message to its other members.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Multicast {
    /// `MPI_Ibcast` on a communicator of the group's members, created once at setup
    /// (`MPI_Comm_create_group`; at K = 15, r = 5 most of a run's setup).
    #[default]
    Broadcast,
    /// `MPI_Isend` to each other member on the world communicator, tagged by the group: no
    /// communicators to create; the sender's link carries every copy.
    Unicasts,
}

/// When the Shuffle's transfers happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShuffleSchedule {
    /// Every transfer of an iteration is started at once: groups with different members share
    /// the links concurrently.
    #[default]
    Parallel,
    /// One turn (a sender's message to its group) at a time across all servers, every server
    /// entering a barrier before each: only one server uses the network at a time, as in the
    /// thesis's EC2 runs (§2.7: a barrier before each turn in the authors' code).
    Turns,
}

fn contiguous() -> ReducePolicy {
    ReducePolicy::Contiguous
}

impl ShuffleConfig {
    /// The section's own checks (`outrun pagerank-load` applies them to its arguments too).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.servers == 0 {
            return err("scheme.servers", "must be at least 1");
        }
        if self.r == 0 || self.r > self.servers {
            return err(
                "scheme.r",
                format!("= {}: the computation load must be between 1 and scheme.servers = {}", self.r, self.servers),
            );
        }
        for (k, what) in [(self.r, "batches C(K, r)"), (self.r + 1, "multicast groups C(K, r+1)")] {
            let count = outrun_codes::binomial(self.servers, k);
            if count > outrun_codes::MAX_SUBSETS && k <= self.servers {
                return err(
                    "scheme.r",
                    format!(
                        "= {}: {count} {what} with K = {} servers; at most {} (every group is an MPI communicator)",
                        self.r,
                        self.servers,
                        outrun_codes::MAX_SUBSETS
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Parameters of CodedReduce on an (n, L)-regular tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeConfig {
    /// Children per parent.
    pub n: usize,
    /// Layers of workers below the master.
    pub layers: usize,
    /// Stragglers tolerated per parent.
    #[serde(default)]
    pub s: usize,
    /// Code of each sibling group.
    #[serde(default)]
    pub code: CodeChoice,
    /// Random draws of a cyclic code.
    #[serde(default = "default_draws")]
    pub draws: usize,
    /// Number of workers; follows from n and layers (given only as a check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
    /// Corrupted results each parent locates and excludes among its children (s ≥ 2·byzantine).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub byzantine: usize,
}

fn default_draws() -> usize {
    10
}

/// The linear code of each CommFR-GC group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LinearChoice {
    /// Random Gaussian generator (MDS), best of `draws` by worst condition number.
    #[default]
    Gaussian,
    /// Systematic MDS with a Cauchy parity block: no solve when the systematic workers arrive.
    Systematic,
    /// (3,6)-regular LDPC with a peeling decoder (s = m, groups of at least 10).
    Ldpc,
    /// The repetition code (m = 1): Tandon et al.'s fractional repetition.
    Repetition,
}

impl LinearChoice {
    /// The config value.
    pub fn name(self) -> &'static str {
        match self {
            LinearChoice::Gaussian => "gaussian",
            LinearChoice::Systematic => "systematic",
            LinearChoice::Ldpc => "ldpc",
            LinearChoice::Repetition => "repetition",
        }
    }
}

/// Communication-efficient gradient coding (CommFR-GC, Kadhe et al.): groups of N = s + m
/// workers hold the same data; each uploads ⌈len/m⌉ values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CegcConfig {
    /// Number of workers n.
    pub workers: usize,
    /// Stragglers tolerated (any s; more when spread over groups).
    pub s: usize,
    /// Communication saving m (the code's dimension K): uploads are ⌈len/m⌉ values.
    #[serde(default = "one")]
    pub m: usize,
    /// The group code.
    #[serde(default)]
    pub code: LinearChoice,
    /// Random draws of a Gaussian or LDPC code.
    #[serde(default = "default_draws")]
    pub draws: usize,
    /// Corrupted results each group locates and excludes (s ≥ 2·byzantine).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub byzantine: usize,
}

fn one() -> usize {
    1
}

/// Ye and Abbe's communication-computation efficient gradient coding (CGC) and its group version
/// (G-CGC, Remark 5 of the AGC paper): cyclic placement of d = s + m parts per worker, one
/// upload of ⌈len/m⌉ values, any n − s workers decode (per group for G-CGC).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CgcConfig {
    /// Number of workers n.
    pub workers: usize,
    /// Stragglers tolerated, s_max (per group for G-CGC).
    pub s: usize,
    /// Communication reduction m = w/q: uploads are ⌈len/m⌉ values.
    #[serde(default = "one")]
    pub m: usize,
    /// Random draws of E; the most stable one is used.
    #[serde(default = "default_agc_draws")]
    pub draws: usize,
}

/// Adaptive gradient coding (AGC, Cao et al.) and its group version (G-AGC).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgcConfig {
    /// Number of workers n.
    pub workers: usize,
    /// Parts per worker d (tolerates up to d − 1 stragglers; per group for G-AGC).
    pub d: usize,
    /// Sub-vectors L (and most rounds per iteration).
    pub rounds: usize,
    /// Random draws of E; the most stable one is used.
    #[serde(default = "default_agc_draws")]
    pub draws: usize,
}

/// Ten draws: the notes' §8.H seed search (over ≥ 10 seeds; at N = 12, L = 12 five draws left
/// some seeds above 1e-6 relative error, ten did not).
fn default_agc_draws() -> usize {
    10
}

/// Clustered gradient coding (GC-SC, GC-DC; Buyukates et al.): K workers in P clusters of
/// ℓ = K/P, an independent ℓ-worker cyclic gradient code per cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Number of workers K.
    pub workers: usize,
    /// Number of clusters P (divides K).
    pub clusters: usize,
    /// Computation load r: mini-batches each worker combines per iteration; every cluster
    /// tolerates r − 1 stragglers.
    pub r: usize,
    /// GC-DC: clusters each worker can serve (it stores their n·ℓ mini-batches). 1 = GC-SC.
    #[serde(default = "one")]
    pub n: usize,
    /// GC-DC: which straggler states the master clusters with.
    #[serde(default)]
    pub ssi: Ssi,
    /// GC-DC: cap each group's placement at ⌈|G|/P⌉ round-robin rounds (the note's canonical
    /// reading of Algorithm 1; `false` = uncapped).
    #[serde(default = "yes")]
    pub capped: bool,
    /// GC-DC: order inside each cluster's column (`index`, or `rate`: fastest believed first,
    /// for heterogeneous workers).
    #[serde(default)]
    pub order: ColumnOrder,
    /// GC-DC: a worker is a straggler when its believed rate is below `tau` (heterogeneous and
    /// time-varying rates); unset = the injected process's slow state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<f64>,
    /// Random draws of each cluster's cyclic code; the best-conditioned one is used.
    #[serde(default = "default_draws")]
    pub draws: usize,
}

/// Gradient coding with static clustering (GC-SC): GC-DC's keys without the dynamic ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticClusterConfig {
    /// Number of workers K.
    pub workers: usize,
    /// Number of clusters P (divides K).
    pub clusters: usize,
    /// Computation load r.
    pub r: usize,
    /// Random draws of each cluster's cyclic code.
    #[serde(default = "default_draws")]
    pub draws: usize,
}

impl StaticClusterConfig {
    /// The same keys as a clustered config with n = 1 (no dynamic keys apply).
    pub fn as_clusters(&self) -> ClusterConfig {
        ClusterConfig {
            workers: self.workers,
            clusters: self.clusters,
            r: self.r,
            n: 1,
            ssi: Ssi::default(),
            capped: true,
            order: ColumnOrder::default(),
            tau: None,
            draws: self.draws,
        }
    }
}

fn yes() -> bool {
    true
}

/// The code of a coded mat-vec scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MatvecCode {
    /// Dense Gaussian MDS: any r coded rows decode (one r × r LU solve).
    #[default]
    Gaussian,
    /// Systematic MDS: the first r coded rows are A's rows; only missing entries are solved.
    Systematic,
    /// LT (robust soliton, peeling decoder): for large r; needs about r(1 + overhead) rows.
    Lt,
}

impl MatvecCode {
    fn is_default(&self) -> bool {
        *self == MatvecCode::default()
    }

    /// The config value.
    pub fn name(self) -> &'static str {
        match self {
            MatvecCode::Gaussian => "gaussian",
            MatvecCode::Systematic => "systematic",
            MatvecCode::Lt => "lt",
        }
    }
}

/// Coded and uncoded mat-vec schemes (HCMM and its baselines): N heterogeneous workers, each
/// with a run-time law a_i·ℓ + (ℓ/μ_i)·W per load of ℓ rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatvecSchemeConfig {
    /// Number of workers N.
    pub workers: usize,
    /// The code (coded schemes). Keys left at their defaults are not written back (the
    /// uncoded schemes do not accept them).
    #[serde(default, skip_serializing_if = "MatvecCode::is_default")]
    pub code: MatvecCode,
    /// Shift per row a_i, seconds (default: `[stragglers]`'s, for shifted-exp and weibull).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<PerWorker>,
    /// Straggling parameter μ_i, rows per second (default: `[stragglers]`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu: Option<PerWorker>,
    /// Weibull shape α_i (default: `[stragglers]`'s, or 1: exponential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<PerWorker>,
    /// LT: the loads are allocated for r(1 + overhead) rows.
    #[serde(default = "default_overhead", skip_serializing_if = "is_default_overhead")]
    pub overhead: f64,
    /// LT: robust soliton c.
    #[serde(default = "default_lt_c", skip_serializing_if = "is_default_lt_c")]
    pub lt_c: f64,
    /// LT: robust soliton δ.
    #[serde(default = "default_lt_delta", skip_serializing_if = "is_default_lt_delta")]
    pub lt_delta: f64,
    /// HCMM with a budget C (thesis §3.6): the workers are the machines available, grouped into
    /// types by (a, μ); Algorithm 2 drops the fastest machines until the expected cost
    /// τ*·Σ κμ^γ is within C, and the dropped ones get no rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// Cost scale κ of a machine (cost per unit time κμ^γ).
    #[serde(default = "one_f", skip_serializing_if = "is_one")]
    pub kappa: f64,
    /// Cost exponent γ ≥ 1.
    #[serde(default = "one_f", skip_serializing_if = "is_one")]
    pub gamma: f64,
}

fn one_f() -> f64 {
    1.0
}
fn is_one(v: &f64) -> bool {
    *v == 1.0
}

fn default_overhead() -> f64 {
    0.13
}
fn default_lt_c() -> f64 {
    0.03
}
fn default_lt_delta() -> f64 {
    0.1
}
fn is_default_overhead(v: &f64) -> bool {
    *v == default_overhead()
}
fn is_default_lt_c(v: &f64) -> bool {
    *v == default_lt_c()
}
fn is_default_lt_delta(v: &f64) -> bool {
    *v == default_lt_delta()
}

impl MatvecSchemeConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        check_workers(self.workers)?;
        let n = self.workers;
        for (field, v) in [("scheme.a", &self.a), ("scheme.mu", &self.mu), ("scheme.shape", &self.shape)] {
            if let Some(v) = v {
                let (ok, what): (fn(f64) -> bool, &str) = if field == "scheme.a" {
                    (|x| x.is_finite() && x >= 0.0, "≥ 0")
                } else {
                    (|x| x.is_finite() && x > 0.0, "positive")
                };
                v.check(field, n, ok, what)?;
            }
        }
        if !(self.overhead.is_finite() && self.overhead >= 0.0 && self.overhead <= 10.0) {
            return err(
                "scheme.overhead",
                format!("= {}: must be in [0, 10] (LT codes allocate for r(1 + overhead) rows)", self.overhead),
            );
        }
        if !(self.lt_c.is_finite() && self.lt_c > 0.0) {
            return err("scheme.lt_c", format!("= {}: must be positive", self.lt_c));
        }
        if !(self.lt_delta.is_finite() && self.lt_delta > 0.0 && self.lt_delta < 1.0) {
            return err("scheme.lt_delta", format!("= {}: must be in (0, 1)", self.lt_delta));
        }
        if let Some(b) = self.budget {
            if !(b.is_finite() && b > 0.0) {
                return err("scheme.budget", format!("= {b}: must be a positive cost"));
            }
        }
        if !(self.kappa.is_finite() && self.kappa > 0.0) {
            return err("scheme.kappa", format!("= {}: must be positive", self.kappa));
        }
        if !(self.gamma.is_finite() && self.gamma >= 1.0) {
            return err(
                "scheme.gamma",
                format!("= {}: must be ≥ 1 (cost κμ^γ grows at least linearly with speed)", self.gamma),
            );
        }
        Ok(())
    }
}

/// Straggler state information the GC-DC master clusters with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Ssi {
    /// The states of the previous iteration as the injected straggler process produced them
    /// (the paper's imperfect SSI: workers' reports modelled as exact and instantaneous).
    #[default]
    Previous,
    /// Measured: a worker is believed slow if its result for the previous iteration had not
    /// arrived when that iteration was decoded (needs no injected process: real clusters).
    Observed,
    /// The states of the current iteration (the paper's perfect SSI): simulator only.
    Perfect,
}

impl Ssi {
    /// The config value.
    pub fn name(self) -> &'static str {
        match self {
            Ssi::Previous => "previous",
            Ssi::Observed => "observed",
            Ssi::Perfect => "perfect",
        }
    }
}

/// Order of the workers inside each column of A_cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ColumnOrder {
    /// By worker index.
    #[default]
    Index,
    /// By believed rate, fastest first.
    Rate,
}

/// `[scheme]`, by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SchemeConfig {
    /// Uncoded master–worker: the master waits for all N workers.
    Umw(StarConfig),
    /// Ignore stragglers (backup workers): the master uses the first N − s results, rescaled.
    Ignore(StarConfig),
    /// Gradient coding, Tandon et al.'s cyclic repetition code.
    GcCyclic(StarConfig),
    /// Gradient coding, fractional repetition ((s+1) | N).
    GcFrac(StarConfig),
    /// Our ring all-reduce among the workers (reduce-scatter + all-gather).
    Rar(StarConfig),
    /// The same training with `MPI_Allreduce`, as the reference.
    Allreduce(StarConfig),
    /// CodedReduce on an (n, L)-regular tree.
    Cr(TreeConfig),
    /// Communication-efficient gradient coding from a linear code (CommFR-GC).
    Cegc(CegcConfig),
    /// Adaptive gradient coding.
    Agc(AgcConfig),
    /// Group adaptive gradient coding.
    #[serde(rename = "g-agc")]
    GAgc(AgcConfig),
    /// Communication-computation efficient gradient coding (Ye and Abbe).
    Cgc(CgcConfig),
    /// Group CGC.
    #[serde(rename = "g-cgc")]
    GCgc(CgcConfig),
    /// Gradient coding with static clustering.
    GcSc(StaticClusterConfig),
    /// Gradient coding with dynamic clustering.
    GcDc(ClusterConfig),
    /// Mat-vec, HCMM: coded rows allocated ∝ 1/λ_i (heterogeneous workers).
    Hcmm(MatvecSchemeConfig),
    /// Mat-vec, uncoded, r/N rows each; the master waits for all.
    UniformUncoded(MatvecSchemeConfig),
    /// Mat-vec, uncoded, rows ∝ the workers' speeds; the master waits for all.
    LbUncoded(MatvecSchemeConfig),
    /// Mat-vec, coded, ⌈r/k⌉ rows each with k chosen by the model.
    UniformCoded(MatvecSchemeConfig),
    /// PageRank with the coded Shuffle: XOR-coded multicasts in the C(K, r+1) groups.
    CodedPagerank(ShuffleConfig),
    /// PageRank with the uncoded Shuffle under the same allocation (r = 1: conventional).
    UncodedPagerank(ShuffleConfig),
    /// Federated: the mean of the uploads (FedAvg).
    Fedavg(FederatedConfig),
    /// Federated: the mean of the uploads of clients that are not faulty (it reads `[faults]`;
    /// the upper reference).
    Oracle(FederatedConfig),
    /// Federated: DiverseFL's per-client guiding updates and filter (thesis ch. 7).
    Diversefl(FederatedConfig),
    /// Federated: the coordinate-wise median.
    Median(FederatedConfig),
    /// Federated: Krum.
    Krum(FederatedConfig),
    /// Federated: Multi-Krum.
    MultiKrum(FederatedConfig),
    /// Federated: Bulyan.
    Bulyan(FederatedConfig),
    /// Federated: resampling (s-replacement), then the median.
    Resampling(FederatedConfig),
    /// Federated: FLTrust (the server's root-set update weighs the clients').
    Fltrust(FederatedConfig),
    /// CodedFedL: gradient descent with parity data at the server and a deadline t*.
    Codedfedl(CodedfedlConfig),
    /// Hierarchical: aligned repetition coding.
    Arc(HierConfig),
    /// Hierarchical: aligned MDS coding.
    Amc(HierConfig),
    /// Hierarchical: every client's gradient forwarded by one helper that received it.
    HierUncoded(HierConfig),
}

/// Every federated kind takes every federated key (those of other rules are ignored), so one
/// config compares the rules with `--set scheme.kind=…`.
const FL_KEYS: &[&str] =
    &["workers", "wait", "wait_s", "byzantine", "select", "sample", "eps1", "eps2", "eps3", "resample"];

const STAR_KEYS: &[&str] = &["workers", "s", "draws"];
const RAR_KEYS: &[&str] = &["workers", "s", "draws", "algorithm"];
const IGNORE_KEYS: &[&str] = &["workers", "s", "draws", "wait_s"];
const GC_KEYS: &[&str] = &["workers", "s", "draws", "byzantine"];
const TREE_KEYS: &[&str] = &["n", "layers", "s", "code", "draws", "workers", "byzantine"];
const CEGC_KEYS: &[&str] = &["workers", "s", "m", "code", "draws", "byzantine"];
const AGC_KEYS: &[&str] = &["workers", "d", "rounds", "draws"];
const CGC_KEYS: &[&str] = &["workers", "s", "m", "draws"];
const GCSC_KEYS: &[&str] = &["workers", "clusters", "r", "draws"];
const GCDC_KEYS: &[&str] = &["workers", "clusters", "r", "n", "ssi", "capped", "order", "tau", "draws"];
const MV_KEYS: &[&str] = &["workers", "code", "a", "mu", "shape", "overhead", "lt_c", "lt_delta"];
const HCMM_KEYS: &[&str] =
    &["workers", "code", "a", "mu", "shape", "overhead", "lt_c", "lt_delta", "budget", "kappa", "gamma"];
const MV_UNCODED_KEYS: &[&str] = &["workers", "a", "mu", "shape"];
const PAGERANK_KEYS: &[&str] = &["servers", "r", "reduce", "shuffle", "multicast"];
const CODEDFEDL_KEYS: &[&str] = &["workers", "delta", "parity", "generator", "deadline", "batches"];
const HIER_KEYS: &[&str] = &["clients", "helpers", "s"];

impl Tagged for SchemeConfig {
    const SECTION: &'static str = "scheme";
    const TAG: &'static str = "kind";
    const VARIANTS: &'static [(&'static str, &'static [&'static str])] = &[
        ("umw", STAR_KEYS),
        ("ignore", IGNORE_KEYS),
        ("gc-cyclic", GC_KEYS),
        ("gc-frac", GC_KEYS),
        ("rar", RAR_KEYS),
        ("allreduce", STAR_KEYS),
        ("cr", TREE_KEYS),
        ("cegc", CEGC_KEYS),
        ("agc", AGC_KEYS),
        ("g-agc", AGC_KEYS),
        ("cgc", CGC_KEYS),
        ("g-cgc", CGC_KEYS),
        ("gc-sc", GCSC_KEYS),
        ("gc-dc", GCDC_KEYS),
        ("hcmm", HCMM_KEYS),
        ("uniform-uncoded", MV_UNCODED_KEYS),
        ("lb-uncoded", MV_UNCODED_KEYS),
        ("uniform-coded", MV_KEYS),
        ("coded-pagerank", PAGERANK_KEYS),
        ("uncoded-pagerank", PAGERANK_KEYS),
        ("fedavg", FL_KEYS),
        ("oracle", FL_KEYS),
        ("diversefl", FL_KEYS),
        ("median", FL_KEYS),
        ("krum", FL_KEYS),
        ("multi-krum", FL_KEYS),
        ("bulyan", FL_KEYS),
        ("resampling", FL_KEYS),
        ("fltrust", FL_KEYS),
        ("codedfedl", CODEDFEDL_KEYS),
        ("arc", HIER_KEYS),
        ("amc", HIER_KEYS),
        ("hier-uncoded", HIER_KEYS),
    ];

    fn variant(kind: &str, rest: toml::Value) -> Result<Self, ConfigError> {
        if kind.ends_with("pagerank") {
            if rest.get("servers").is_none() {
                return err("scheme.servers", "missing: the number of servers K");
            }
            let c = de(rest, "scheme")?;
            return Ok(if kind == "coded-pagerank" {
                SchemeConfig::CodedPagerank(c)
            } else {
                SchemeConfig::UncodedPagerank(c)
            });
        }
        if matches!(kind, "arc" | "amc" | "hier-uncoded") {
            for (key, what) in [
                ("clients", "the number of clients n_e"),
                ("helpers", "the number of helpers n_h"),
                ("s", "the failed links tolerated per client s"),
            ] {
                if rest.get(key).is_none() {
                    return err(&format!("scheme.{key}"), format!("missing: {kind} needs {what}"));
                }
            }
            let c = de(rest, "scheme")?;
            return Ok(match kind {
                "arc" => SchemeConfig::Arc(c),
                "amc" => SchemeConfig::Amc(c),
                _ => SchemeConfig::HierUncoded(c),
            });
        }
        if kind != "cr" && rest.get("workers").is_none() {
            return err("scheme.workers", "missing: the number of workers N");
        }
        let star = || de::<StarConfig>(rest.clone(), "scheme");
        if let Some(make) = federated(kind) {
            if matches!(kind, "krum" | "multi-krum" | "bulyan") && rest.get("byzantine").is_none() {
                return err(
                    "scheme.byzantine",
                    format!("missing: {kind} needs the number of faulty clients it assumes, f"),
                );
            }
            return Ok(make(de(rest, "scheme")?));
        }
        Ok(match kind {
            "umw" => SchemeConfig::Umw(star()?),
            "ignore" => SchemeConfig::Ignore(star()?),
            "gc-cyclic" => SchemeConfig::GcCyclic(star()?),
            "gc-frac" => SchemeConfig::GcFrac(star()?),
            "rar" => SchemeConfig::Rar(star()?),
            "allreduce" => SchemeConfig::Allreduce(star()?),
            "cegc" => {
                if rest.get("s").is_none() {
                    return err(
                        "scheme.s",
                        "missing: cegc needs the number of stragglers s (groups have s + m workers)",
                    );
                }
                SchemeConfig::Cegc(de(rest, "scheme")?)
            }
            "cgc" | "g-cgc" => {
                if rest.get("s").is_none() {
                    return err(
                        "scheme.s",
                        format!(
                            "missing: {kind} needs s_max, the stragglers it tolerates (a worker holds s + m parts)"
                        ),
                    );
                }
                let c = de(rest, "scheme")?;
                if kind == "cgc" {
                    SchemeConfig::Cgc(c)
                } else {
                    SchemeConfig::GCgc(c)
                }
            }
            "agc" | "g-agc" => {
                for (key, what) in [("d", "the parts per worker d"), ("rounds", "the number of sub-vectors L (rounds)")]
                {
                    if rest.get(key).is_none() {
                        return err(&format!("scheme.{key}"), format!("missing: {kind} needs {what}"));
                    }
                }
                let c = de(rest, "scheme")?;
                if kind == "agc" {
                    SchemeConfig::Agc(c)
                } else {
                    SchemeConfig::GAgc(c)
                }
            }
            "gc-sc" | "gc-dc" => {
                for (key, what) in [
                    ("clusters", "the number of clusters P"),
                    ("r", "the computation load r (mini-batches per worker per iteration)"),
                ] {
                    if rest.get(key).is_none() {
                        return err(&format!("scheme.{key}"), format!("missing: {kind} needs {what}"));
                    }
                }
                if kind == "gc-dc" && rest.get("n").is_none() {
                    return err("scheme.n", "missing: gc-dc needs n, the clusters each worker can serve (memory n·ℓ mini-batches; n = 1 is gc-sc)");
                }
                if kind == "gc-sc" {
                    SchemeConfig::GcSc(de(rest, "scheme")?)
                } else {
                    SchemeConfig::GcDc(de(rest, "scheme")?)
                }
            }
            "hcmm" => SchemeConfig::Hcmm(de(rest, "scheme")?),
            "uniform-uncoded" => SchemeConfig::UniformUncoded(de(rest, "scheme")?),
            "lb-uncoded" => SchemeConfig::LbUncoded(de(rest, "scheme")?),
            "uniform-coded" => SchemeConfig::UniformCoded(de(rest, "scheme")?),
            "codedfedl" => SchemeConfig::Codedfedl(de(rest, "scheme")?),
            "cr" => {
                for key in ["n", "layers"] {
                    if rest.get(key).is_none() {
                        let what =
                            if key == "n" { "the number of children per parent n" } else { "the number of layers L" };
                        return err(&format!("scheme.{key}"), format!("missing: cr needs {what}"));
                    }
                }
                SchemeConfig::Cr(de(rest, "scheme")?)
            }
            _ => unreachable!("kinds are checked against VARIANTS"),
        })
    }
}

/// The variant of a federated scheme's kind.
fn federated(kind: &str) -> Option<fn(FederatedConfig) -> SchemeConfig> {
    Some(match kind {
        "fedavg" => SchemeConfig::Fedavg,
        "oracle" => SchemeConfig::Oracle,
        "diversefl" => SchemeConfig::Diversefl,
        "median" => SchemeConfig::Median,
        "krum" => SchemeConfig::Krum,
        "multi-krum" => SchemeConfig::MultiKrum,
        "bulyan" => SchemeConfig::Bulyan,
        "resampling" => SchemeConfig::Resampling,
        "fltrust" => SchemeConfig::Fltrust,
        _ => return None,
    })
}

impl SchemeConfig {
    pub(super) fn from_section(s: toml::Table) -> Result<Self, ConfigError> {
        <Self as Tagged>::from_section(s)
    }

    /// The config spelling of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            SchemeConfig::Umw(_) => "umw",
            SchemeConfig::Ignore(_) => "ignore",
            SchemeConfig::GcCyclic(_) => "gc-cyclic",
            SchemeConfig::GcFrac(_) => "gc-frac",
            SchemeConfig::Rar(_) => "rar",
            SchemeConfig::Allreduce(_) => "allreduce",
            SchemeConfig::Cr(_) => "cr",
            SchemeConfig::Cegc(_) => "cegc",
            SchemeConfig::Agc(_) => "agc",
            SchemeConfig::GAgc(_) => "g-agc",
            SchemeConfig::Cgc(_) => "cgc",
            SchemeConfig::GCgc(_) => "g-cgc",
            SchemeConfig::GcSc(_) => "gc-sc",
            SchemeConfig::GcDc(_) => "gc-dc",
            SchemeConfig::Hcmm(_) => "hcmm",
            SchemeConfig::UniformUncoded(_) => "uniform-uncoded",
            SchemeConfig::LbUncoded(_) => "lb-uncoded",
            SchemeConfig::UniformCoded(_) => "uniform-coded",
            SchemeConfig::CodedPagerank(_) => "coded-pagerank",
            SchemeConfig::UncodedPagerank(_) => "uncoded-pagerank",
            SchemeConfig::Fedavg(_) => "fedavg",
            SchemeConfig::Oracle(_) => "oracle",
            SchemeConfig::Diversefl(_) => "diversefl",
            SchemeConfig::Median(_) => "median",
            SchemeConfig::Krum(_) => "krum",
            SchemeConfig::MultiKrum(_) => "multi-krum",
            SchemeConfig::Bulyan(_) => "bulyan",
            SchemeConfig::Resampling(_) => "resampling",
            SchemeConfig::Fltrust(_) => "fltrust",
            SchemeConfig::Codedfedl(_) => "codedfedl",
            SchemeConfig::Arc(_) => "arc",
            SchemeConfig::Amc(_) => "amc",
            SchemeConfig::HierUncoded(_) => "hier-uncoded",
        }
    }

    /// The federated schemes' parameters, if this is one.
    pub fn federated(&self) -> Option<&FederatedConfig> {
        match self {
            SchemeConfig::Fedavg(c)
            | SchemeConfig::Oracle(c)
            | SchemeConfig::Diversefl(c)
            | SchemeConfig::Median(c)
            | SchemeConfig::Krum(c)
            | SchemeConfig::MultiKrum(c)
            | SchemeConfig::Bulyan(c)
            | SchemeConfig::Resampling(c)
            | SchemeConfig::Fltrust(c) => Some(c),
            _ => None,
        }
    }

    /// The mat-vec schemes' parameters, if this is one (the uncoded ones have the code keys'
    /// defaults).
    pub fn matvec(&self) -> Option<&MatvecSchemeConfig> {
        match self {
            SchemeConfig::Hcmm(c)
            | SchemeConfig::UniformCoded(c)
            | SchemeConfig::UniformUncoded(c)
            | SchemeConfig::LbUncoded(c) => Some(c),
            _ => None,
        }
    }

    /// The PageRank schemes' parameters, if this is one.
    pub fn pagerank(&self) -> Option<&ShuffleConfig> {
        match self {
            SchemeConfig::CodedPagerank(c) | SchemeConfig::UncodedPagerank(c) => Some(c),
            _ => None,
        }
    }

    /// The hierarchical schemes' parameters, if this is one.
    pub fn hier(&self) -> Option<&HierConfig> {
        match self {
            SchemeConfig::Arc(c) | SchemeConfig::Amc(c) | SchemeConfig::HierUncoded(c) => Some(c),
            _ => None,
        }
    }

    /// Schemes with no master: rings, and the PageRank servers.
    pub fn masterless(&self) -> bool {
        self.is_ring() || self.pagerank().is_some()
    }

    /// Schemes whose workers form a ring with no master.
    pub fn is_ring(&self) -> bool {
        matches!(self, SchemeConfig::Rar(_) | SchemeConfig::Allreduce(_))
    }

    /// Number of workers N.
    pub fn workers(&self) -> usize {
        if let Some(c) = self.federated() {
            return c.workers;
        }
        match self {
            SchemeConfig::Cr(t) => {
                (1..=t.layers.min(64) as u32).fold(0usize, |acc, l| acc.saturating_add(t.n.saturating_pow(l)))
            }
            SchemeConfig::Cegc(c) => c.workers,
            SchemeConfig::Agc(c) | SchemeConfig::GAgc(c) => c.workers,
            SchemeConfig::Cgc(c) | SchemeConfig::GCgc(c) => c.workers,
            SchemeConfig::GcSc(c) => c.workers,
            SchemeConfig::GcDc(c) => c.workers,
            SchemeConfig::Hcmm(c)
            | SchemeConfig::UniformCoded(c)
            | SchemeConfig::UniformUncoded(c)
            | SchemeConfig::LbUncoded(c) => c.workers,
            SchemeConfig::CodedPagerank(c) | SchemeConfig::UncodedPagerank(c) => c.servers,
            SchemeConfig::Codedfedl(c) => c.workers,
            SchemeConfig::Arc(c) | SchemeConfig::Amc(c) | SchemeConfig::HierUncoded(c) => c.clients,
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c.workers,
            _ => unreachable!("federated schemes return above"),
        }
    }

    /// Stragglers tolerated (per parent for trees).
    pub fn s(&self) -> usize {
        if let Some(c) = self.federated() {
            return c.workers - c.need(None).min(c.workers);
        }
        match self {
            SchemeConfig::Cr(t) => t.s,
            SchemeConfig::Cegc(c) => c.s,
            SchemeConfig::Agc(c) | SchemeConfig::GAgc(c) => c.d.saturating_sub(1),
            SchemeConfig::Cgc(c) | SchemeConfig::GCgc(c) => c.s,
            SchemeConfig::GcSc(c) => c.r.saturating_sub(1),
            SchemeConfig::GcDc(c) => c.r.saturating_sub(1),
            // the plan says how many workers the allocation can lose
            SchemeConfig::Hcmm(_)
            | SchemeConfig::UniformUncoded(_)
            | SchemeConfig::LbUncoded(_)
            | SchemeConfig::UniformCoded(_) => 0,
            // every multicast group needs all its members
            SchemeConfig::CodedPagerank(_) | SchemeConfig::UncodedPagerank(_) => 0,
            // the plan says how many clients are expected by t*
            SchemeConfig::Codedfedl(_) => 0,
            SchemeConfig::Arc(c) | SchemeConfig::Amc(c) | SchemeConfig::HierUncoded(c) => c.s,
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c.s,
            _ => unreachable!("federated schemes return above"),
        }
    }

    /// Corrupted results a parent locates and excludes (`scheme.byzantine`; 0 for schemes
    /// without it).
    pub fn byzantine(&self) -> usize {
        match self {
            SchemeConfig::GcCyclic(c) | SchemeConfig::GcFrac(c) => c.byzantine,
            SchemeConfig::Cr(t) => t.byzantine,
            SchemeConfig::Cegc(c) => c.byzantine,
            _ => 0,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let kind = self.kind();
        if let Some(d) = self.draws().filter(|&d| d > MAX_DRAWS) {
            return err(
                "scheme.draws",
                format!("= {d}: at most {MAX_DRAWS} (each draw builds a code and checks it over its survivor sets)"),
            );
        }
        if let Some(c) = self.federated() {
            return c.validate(kind);
        }
        let c = match self {
            SchemeConfig::Cr(t) => return t.validate(),
            SchemeConfig::Cegc(c) => return c.validate(),
            SchemeConfig::Agc(c) | SchemeConfig::GAgc(c) => return c.validate(kind),
            SchemeConfig::Cgc(c) | SchemeConfig::GCgc(c) => return c.validate(kind),
            SchemeConfig::GcSc(c) => return c.as_clusters().validate(),
            SchemeConfig::GcDc(c) => return c.validate(),
            SchemeConfig::Hcmm(c)
            | SchemeConfig::UniformCoded(c)
            | SchemeConfig::UniformUncoded(c)
            | SchemeConfig::LbUncoded(c) => return c.validate(),
            SchemeConfig::CodedPagerank(c) | SchemeConfig::UncodedPagerank(c) => return c.validate(),
            SchemeConfig::Codedfedl(c) => return c.validate(),
            SchemeConfig::Arc(c) | SchemeConfig::Amc(c) | SchemeConfig::HierUncoded(c) => return c.validate(kind),
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => c,
            _ => unreachable!("federated schemes are validated above"),
        };
        let n = c.workers;
        if n == 0 {
            return err("scheme.workers", "must be at least 1");
        }
        if n > MAX_WORKERS {
            return err("scheme.workers", format!("= {n}: at most {MAX_WORKERS} workers"));
        }
        if self.is_ring() && n < 2 {
            return err("scheme.workers", format!("= {n}: a ring needs at least 2 workers"));
        }
        match self {
            SchemeConfig::Umw(_) | SchemeConfig::Rar(_) | SchemeConfig::Allreduce(_) if c.s != 0 => err(
                "scheme.s",
                format!("= {}: \"{kind}\" tolerates no stragglers (it waits for every worker); remove scheme.s (on the command line: --set scheme.s=) or use ignore / gc-cyclic", c.s),
            ),
            _ if c.s >= n => err("scheme.s", format!("= {}: must be less than scheme.workers = {n}", c.s)),
            SchemeConfig::GcFrac(_) if !n.is_multiple_of(c.s + 1) => err(
                "scheme.s",
                format!("= {}: gc-frac needs s+1 = {} to divide scheme.workers = {n}; pick s+1 among the divisors of {n}, or use gc-cyclic", c.s, c.s + 1),
            ),
            SchemeConfig::GcCyclic(_) if c.draws == 0 => err("scheme.draws", "must be at least 1"),
            SchemeConfig::GcCyclic(_) if n > MAX_CYCLIC => cyclic_too_large("scheme.workers", n, "workers"),
            _ => check_byzantine(c.byzantine, c.s, "").and_then(|()| check_wait_s(c.wait_s)),
        }
    }

    /// `scheme.draws`, for the schemes that draw random codes.
    fn draws(&self) -> Option<usize> {
        match self {
            SchemeConfig::Umw(c)
            | SchemeConfig::Ignore(c)
            | SchemeConfig::GcCyclic(c)
            | SchemeConfig::GcFrac(c)
            | SchemeConfig::Rar(c)
            | SchemeConfig::Allreduce(c) => Some(c.draws),
            SchemeConfig::Cr(c) => Some(c.draws),
            SchemeConfig::Cegc(c) => Some(c.draws),
            SchemeConfig::Agc(c) | SchemeConfig::GAgc(c) => Some(c.draws),
            SchemeConfig::Cgc(c) | SchemeConfig::GCgc(c) => Some(c.draws),
            SchemeConfig::GcSc(c) => Some(c.draws),
            SchemeConfig::GcDc(c) => Some(c.draws),
            _ => None,
        }
    }

    /// A deadline wait rule's seconds (`scheme.wait_s`; `ignore` and the federated schemes).
    pub fn wait_s(&self) -> Option<f64> {
        match self {
            SchemeConfig::Ignore(c) => c.wait_s,
            other => other.federated().and_then(|f| f.wait_s),
        }
    }
}

/// Most workers a scheme may have.
pub(super) const MAX_WORKERS: usize = 100_000;

/// Most children of one random cyclic gradient code (`gc-cyclic`, `cr` with `code = "cyclic"`,
/// the clusters of `gc-sc`/`gc-dc`): the master solves an (n − s) × n least-squares system for
/// every new survivor set, O(n³), and the plan screens each draw with 20 such solves (their
/// times at n = 256 and beyond: docs/performance.md §17).
pub(super) const MAX_CYCLIC: usize = 256;

fn cyclic_too_large(field: &str, n: usize, what: &str) -> Result<(), ConfigError> {
    err(
        field,
        format!("= {n}: a random cyclic gradient code over {n} {what} decodes an (n − s) × n least-squares system for every new survivor set (O(n³): ~2 s per iteration at n = 1000); at most {MAX_CYCLIC}; use gc-frac (decoding O(n)), cr (small codes per parent) or gc-sc (cyclic codes per cluster)"),
    )
}

fn check_workers(n: usize) -> Result<(), ConfigError> {
    match n {
        0 => err("scheme.workers", "must be at least 1"),
        n if n > MAX_WORKERS => err("scheme.workers", format!("= {n}: at most {MAX_WORKERS} workers")),
        _ => Ok(()),
    }
}

impl CegcConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let (n, s, m) = (self.workers, self.s, self.m);
        check_workers(n)?;
        if m == 0 {
            return err("scheme.m", "must be at least 1 (uploads are ⌈len/m⌉ values)");
        }
        let group = s + m;
        if group > n {
            return err(
                "scheme.s",
                format!("= {s} with m = {m}: groups of s + m = {group} workers do not fit in scheme.workers = {n}"),
            );
        }
        if !n.is_multiple_of(group) {
            return err(
                "scheme.workers",
                format!(
                    "= {n}: CommFR-GC makes groups of s + m = {group} workers, which must divide the number of workers"
                ),
            );
        }
        match self.code {
            LinearChoice::Repetition if m != 1 => err("scheme.m", format!("= {m}: the repetition code has dimension 1; use m = 1")),
            LinearChoice::Ldpc if s != m || group < 10 => err(
                "scheme.code",
                format!("= \"ldpc\" is (3,6)-regular (rate 1/2): it needs s = m and groups of at least 10 workers (smaller ones force two workers onto the same checks); here s = {s}, m = {m}"),
            ),
            _ if self.draws == 0 => err("scheme.draws", "must be at least 1"),
            _ => check_byzantine(self.byzantine, s, " per group"),
        }
    }
}

/// Most random codes a scheme may draw to keep the best (`scheme.draws`; default 10): a draw
/// is checked over its survivor sets, up to tens of milliseconds at 100 workers, so this many
/// already take minutes there.
pub(super) const MAX_DRAWS: usize = 10_000;

/// Most sub-vectors (rounds) an adaptive code may have.
pub(super) const MAX_ROUNDS: usize = 64;

/// Most workers × rounds in one adaptive code: its decoding systems have up to that many rows,
/// and their conditioning (so the decode error) and the plan's search time grow with it (N = 40,
/// L = 12 already decodes with ~4e-4 relative error).
pub(super) const MAX_AGC_ROWS: usize = 480;

impl AgcConfig {
    fn validate(&self, kind: &str) -> Result<(), ConfigError> {
        let (n, d, l) = (self.workers, self.d, self.rounds);
        check_workers(n)?;
        if d == 0 || d > n {
            return err("scheme.d", format!("= {d}: must be between 1 and scheme.workers = {n}"));
        }
        if l == 0 || l > MAX_ROUNDS {
            return err("scheme.rounds", format!("= {l}: must be between 1 and {MAX_ROUNDS}"));
        }
        if self.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        // the largest code: all workers (agc), or the last G-AGC group (d plus the remainder)
        let size = if kind == "g-agc" { d + n % d } else { n };
        if size * l > MAX_AGC_ROWS {
            let what = if kind == "g-agc" {
                format!("a largest group of {size} workers")
            } else {
                format!("scheme.workers = {n}")
            };
            return err(
                "scheme.rounds",
                format!("= {l} with {what}: an adaptive code of N workers and L rounds decodes systems of up to N·L = {} rows; at most {MAX_AGC_ROWS} are supported (the decode error grows with N·L); use fewer rounds{}", size * l, if kind == "g-agc" { "" } else { " or kind = \"g-agc\"" }),
            );
        }
        Ok(())
    }
}

impl CgcConfig {
    fn validate(&self, kind: &str) -> Result<(), ConfigError> {
        let (n, s, m) = (self.workers, self.s, self.m);
        check_workers(n)?;
        if m == 0 {
            return err("scheme.m", "must be at least 1 (uploads are ⌈len/m⌉ values)");
        }
        if s + m > n {
            return err(
                "scheme.m",
                format!(
                    "= {m} with scheme.s = {s}: a worker holds d = s + m = {} parts, at most scheme.workers = {n}",
                    s + m
                ),
            );
        }
        if self.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        // the largest code: all workers (cgc), or the last G-CGC group (d plus the remainder)
        let d = s + m;
        let size = if kind == "g-cgc" { d + n % d } else { n };
        if size * m > MAX_AGC_ROWS {
            return err(
                "scheme.m",
                format!("= {m} with {size} workers in a code: its decoding systems have n − s rows and its encoding n·m columns; at most {MAX_AGC_ROWS} are supported{}", if kind == "g-cgc" { "" } else { "; or kind = \"g-cgc\"" }),
            );
        }
        Ok(())
    }
}

impl ClusterConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let (k, p, r, n) = (self.workers, self.clusters, self.r, self.n);
        check_workers(k)?;
        if p == 0 || !k.is_multiple_of(p) {
            return err(
                "scheme.clusters",
                format!("= {p}: must divide scheme.workers = {k} (clusters of equal size ℓ = K/P)"),
            );
        }
        let ell = k / p;
        if r == 0 || r > ell {
            return err("scheme.r", format!("= {r}: must be between 1 and the cluster size ℓ = K/P = {ell}"));
        }
        if n == 0 || n > p {
            return err(
                "scheme.n",
                format!("= {n}: must be between 1 and scheme.clusters = {p} (a worker serves n distinct clusters)"),
            );
        }
        if ell > MAX_CYCLIC {
            return cyclic_too_large("scheme.clusters", ell, "workers per cluster");
        }
        if let Some(tau) = self.tau {
            if !(tau.is_finite() && tau > 0.0) {
                return err("scheme.tau", format!("= {tau}: must be a positive rate"));
            }
        }
        if self.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        Ok(())
    }
}

impl TreeConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        let n = self.n;
        if n < 2 {
            return err("scheme.n", format!("= {n}: must be at least 2"));
        }
        if n > MAX_WORKERS {
            return err("scheme.n", format!("= {n}: at most {MAX_WORKERS}"));
        }
        match self.layers {
            0 => return err("scheme.layers", "must be at least 1"),
            l if l > 8 => return err("scheme.layers", format!("= {l}: at most 8 layers are supported")),
            _ => {}
        }
        if self.s >= n {
            return err(
                "scheme.s",
                format!("= {}: must be less than scheme.n = {n} (s stragglers per parent)", self.s),
            );
        }
        check_byzantine(self.byzantine, self.s, " per parent")?;
        let total = SchemeConfig::Cr(self.clone()).workers();
        if total > MAX_WORKERS {
            return err(
                "scheme.n",
                format!(
                    "= {n} with layers = {}: the tree would have {total} workers, at most {MAX_WORKERS}",
                    self.layers
                ),
            );
        }
        if let Some(w) = self.workers {
            if w != total {
                return err(
                    "scheme.workers",
                    format!(
                        "= {w}, but a ({n},{}) tree has {total} workers; omit scheme.workers or set it to {total}",
                        self.layers
                    ),
                );
            }
        }
        if self.code == CodeChoice::Cyclic && n > MAX_CYCLIC {
            return cyclic_too_large("scheme.n", n, "children per parent");
        }
        if self.code == CodeChoice::Frac && !n.is_multiple_of(self.s + 1) {
            return err(
                "scheme.code",
                format!("= \"frac\" needs s+1 = {} to divide scheme.n = {n}; use code = \"cyclic\"", self.s + 1),
            );
        }
        if self.draws == 0 {
            return err("scheme.draws", "must be at least 1");
        }
        Ok(())
    }
}
