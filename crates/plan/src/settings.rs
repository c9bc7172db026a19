//! What the drivers read besides the nodes: the run's name, length and limits, the job and the
//! problem's size, how results go up, how compute time is obtained (on the straggler model),
//! and the simulator's network. Copied from the config when the plan is built, so the plan is
//! the only thing the MPI engine, the simulator, the node protocol and the log receive.

use serde::{Deserialize, Serialize};

use outrun_config::{Config, JobConfig, NetworkConfig, Rate};

/// The run: `[run]` and the engine's polling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// `run.name`: the run directory is `<out_dir>/<name>-<timestamp>`.
    pub name: String,
    /// `run.seed`.
    pub seed: u64,
    /// Iterations to run (`run.iterations`; a job may stop earlier, e.g. PageRank at `job.tol`).
    pub iterations: u64,
    /// Seconds an iteration may wait for the results it needs before the run fails.
    pub deadline: f64,
    /// Parent directory of run directories.
    pub out_dir: String,
    /// Write the state after every iteration to `trajectory.csv`.
    pub trajectory: bool,
    /// The engine's longest sleep between polls of the network, µs (`engine.poll_us`).
    pub poll_us: u64,
    /// How a waiting rank polls (`engine.idle`; `auto` is resolved by each rank on its host).
    #[serde(default)]
    pub idle: outrun_config::Idle,
    /// `run.checkpoint_every`.
    #[serde(default)]
    pub checkpoint_every: Option<u64>,
    /// The first iteration: 0, or the checkpoint's a resumed run goes on from.
    #[serde(default)]
    pub first: u64,
    /// The checkpoint a resumed run goes on from.
    #[serde(default)]
    pub resumed_from: Option<String>,
}

impl RunSpec {
    /// `[run]` and the engine's polling of `cfg`, as the plan carries them.
    pub fn of(cfg: &Config) -> RunSpec {
        let r = &cfg.run;
        RunSpec {
            name: r.name.clone(),
            seed: r.seed,
            iterations: r.iterations,
            deadline: r.deadline,
            out_dir: r.out_dir.clone(),
            trajectory: r.trajectory,
            poll_us: cfg.engine.poll_us,
            idle: cfg.engine.idle,
            checkpoint_every: r.checkpoint_every,
            first: 0,
            resumed_from: None,
        }
    }
}

/// The problem's size, found when the config is resolved (reading the data set's, matrix's or
/// graph's header or the whole file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Data points d (gradient descent), rows r (mat-vec), vertices n (PageRank).
    pub samples: usize,
    /// Model dimension p (gradient descent), columns m (mat-vec), 0 (PageRank).
    pub features: usize,
}

/// The job: what is computed (the config's job sections) and the problem's size. The drivers
/// never look inside: `outrun_workloads::job` turns it into the job's one implementation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The job's sections (`[job]` and what it reads: `[data]` and `[model]`, `[matrix]` and
    /// `[vector]`, `[graph]`).
    pub config: JobConfig,
    /// The model dimension p (gradient descent), the matrix's columns m (mat-vec), 0 (PageRank);
    /// the samples are `Plan::samples`.
    pub features: usize,
    /// A Python model's size, read from its module before the run (`job.kind = "python"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<PythonModel>,
    /// `data.labels = "auto"`: the label values of the data file in class order (value k is
    /// class k), as every rank maps them; recorded in plan.json.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub label_names: Vec<String>,
}

/// What the planning process learnt from a Python model's `init`: every rank knows the payloads'
/// lengths without importing the module, and checks that its own `init` gave the same θ₀.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PythonModel {
    /// Parameters P (the length of θ₀).
    pub params: usize,
    /// A fingerprint of θ₀'s bits.
    pub init: u64,
}

/// The simulator's network model (`[network]`, rates in bytes per second; real runs ignore it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkSpec {
    /// Every node's NIC rate in each direction (None: infinite).
    pub bandwidth: Option<f64>,
    /// Per-rank NIC rates overriding `bandwidth` (empty, or one per rank).
    pub node_bandwidth: Vec<f64>,
    /// Seconds added to every message.
    pub latency: f64,
    /// Whether messages down the tree cost time (the papers' model counts only uploads).
    pub downlink: bool,
}

impl NetworkSpec {
    /// The validated `[network]` section as the plan carries it (rates in bytes per second).
    pub fn of(net: &NetworkConfig) -> NetworkSpec {
        let rate = |b: &Rate| b.bytes_per_second().expect("validated");
        NetworkSpec {
            bandwidth: net.bandwidth.as_ref().map(rate),
            node_bandwidth: net.node_bandwidth.iter().map(rate).collect(),
            latency: net.latency,
            downlink: net.downlink,
        }
    }

    /// The NIC rate of each of `ranks` ranks (infinite when none is set).
    pub fn rates(&self, ranks: usize) -> Vec<f64> {
        if self.node_bandwidth.is_empty() {
            vec![self.bandwidth.unwrap_or(f64::INFINITY); ranks]
        } else {
            self.node_bandwidth.clone()
        }
    }
}
