//! `outrun`: the command line. Thin on purpose: parsing arguments, printing, exit codes; all
//! the work is in the library crates.

// The arguments' doc comments are clap's `--help` text, written for a terminal: `[stragglers]`
// is a config section, `E[T]` an expectation and `<name>` a placeholder, not rustdoc links or
// HTML (escaping them would print the backslashes in the help).
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

mod codedfedl;
mod link;
mod progress;
mod reproduce;
mod sweep;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use outrun_config::RingAlgorithm;

#[derive(Parser)]
#[command(name = "outrun", version, about = "Coded distributed gradient descent under MPI: run, measure, compare.")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Train under mpirun (use launch/local.sh to get the rank count and flags right).
    Train {
        /// Experiment config (TOML).
        config: PathBuf,
        /// Override a config key, e.g. --set scheme.s=2 (repeatable).
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        /// No progress on stderr (the run's account at the end is still printed).
        #[arg(long, short)]
        quiet: bool,
        /// Go on from the checkpoint of this run directory (or checkpoint file), written with
        /// run.checkpoint_every: the run continues at its iteration in a new run directory and
        /// ends where the uninterrupted run would, bit for bit.
        #[arg(long, value_name = "RUN_DIR")]
        resume: Option<PathBuf>,
    },
    /// Print the plan: ranks, topology, each worker's data and coefficients, wait rules. No MPI.
    Plan {
        config: PathBuf,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        /// Print only the number of MPI ranks the run needs.
        #[arg(long)]
        ranks: bool,
        /// Print the plan as JSON.
        #[arg(long, conflicts_with = "ranks")]
        json: bool,
        /// Print only the default bound on the whole MPI job, in seconds (what the launchers
        /// use unless OUTRUN_TIMEOUT is set): start-up and shutdown allowance plus
        /// run.iterations × run.deadline.
        #[arg(long, conflicts_with_all = ["ranks", "json"])]
        job_bound: bool,
    },
    /// Print the resolved config (after --set) as TOML.
    Config {
        config: PathBuf,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
    },
    /// Validate a config (and its data file); exit 0 if it is runnable. No MPI.
    Check {
        config: PathBuf,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        /// Every rank will run on this machine (launch/local.sh): compare the run's total
        /// memory, not only its largest rank's, with what this machine has.
        #[arg(long)]
        local: bool,
    },
    /// Execute the plan in virtual time (network and straggler models; no MPI) and write a run
    /// directory like a real run's, plus mean / p5 / p95 of the iteration time over trials.
    Simulate {
        config: PathBuf,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        /// Independent trials (trial 0 uses run.seed, i.e. the delays a real run sees).
        #[arg(long, default_value_t = 100)]
        trials: usize,
        /// Compute the θ trajectory of trial 0: auto (when affordable), on, off.
        #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"])]
        math: String,
    },
    /// Predict the best value of a config key by simulation, e.g. --vary scheme.s=0..6.
    Tune {
        config: PathBuf,
        /// KEY=VALUES with VALUES an inclusive integer range a..b or a list a,b,c.
        #[arg(long, value_name = "SECTION.KEY=VALUES")]
        vary: String,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
        set: Vec<String>,
        #[arg(long, default_value_t = 100)]
        trials: usize,
    },
    /// Run every variant of a sweep file (a base config and axes) through a launcher,
    /// repetitions interleaved; resumes after an interruption; ends with the sweep's report.
    Sweep {
        /// The sweep file (TOML: base, axes, repetitions, overrides; see docs/configuration.md).
        file: PathBuf,
        /// Launcher command instead of the file's (e.g. "launch/emu-cluster run").
        #[arg(long)]
        launcher: Option<String>,
        /// Print the runs instead of running them.
        #[arg(long)]
        dry_run: bool,
        /// Base config instead of the file's.
        #[arg(long)]
        base: Option<PathBuf>,
        /// Repetitions instead of the file's.
        #[arg(long)]
        repetitions: Option<usize>,
        /// Directory of the sweep's runs, logs and report (default: the file's out_dir, else
        /// runs/sweep-<name>); running again into the same directory resumes.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// CodedFedL's load allocation for the thesis's simulated network (ch. 5 §5.5: LTE uplinks of
    /// 216 kbps × 0.95^k, 3.072·10⁶ MAC/s × 0.8^k, p = 0.1, α = 2, permuted from the seed): the
    /// deadline t*, each client's load and expected return, the encoding weights (no MPI).
    CodedfedlLoad {
        /// Clients n.
        #[arg(long, default_value_t = 30)]
        clients: usize,
        /// Points per client in a global mini-batch (the thesis: 400).
        #[arg(long, allow_negative_numbers = true, default_value_t = 400.0)]
        points: f64,
        /// Parity rows as a fraction of the global mini-batch, δ = u_max/m.
        #[arg(long, allow_negative_numbers = true, default_value_t = 0.1)]
        delta: f64,
        /// Random Fourier features q.
        #[arg(long, default_value_t = 2000)]
        q: usize,
        /// Outputs (classes) c.
        #[arg(long, default_value_t = 10)]
        c: usize,
        /// Seed of the rates' permutations.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How the clients are numbered: `expected-time` (fastest first by E[T] at --points,
        /// eq. 5.15: the thesis hands out its label-sorted shards in this order) or `seed` (the
        /// order of the permutations).
        #[arg(long, value_enum, default_value_t = ClientOrder::ExpectedTime)]
        order: ClientOrder,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Print the network as a config's [stragglers], [timing] and [links] sections for a
        /// job on this many input features (a point costs q·c/P units).
        #[arg(long, value_name = "P", conflicts_with = "json")]
        toml: Option<usize>,
    },
    /// PageRank's Shuffle loads for a graph, per computation load r: uncoded and coded values,
    /// segments and bytes, the thesis's L (no MPI).
    PagerankLoad {
        /// A SNAP-style edge-list file.
        #[arg(long, conflicts_with = "config", required_unless_present = "config")]
        graph: Option<PathBuf>,
        /// Or a PageRank config: its [graph], scheme.servers and scheme.reduce.
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long = "set", value_name = "SECTION.KEY=VALUE", requires = "config")]
        set: Vec<String>,
        /// Servers K (default: the config's scheme.servers).
        #[arg(long)]
        servers: Option<usize>,
        /// Computation loads: a..b or a,b,c (default 1..K).
        #[arg(long)]
        r: Option<String>,
        /// Reducers: contiguous or mod (default: the config's, else contiguous).
        #[arg(long, value_parser = ["contiguous", "mod"])]
        reduce: Option<String>,
        /// The edge list is directed (with --graph).
        #[arg(long, requires = "graph")]
        directed: bool,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The papers' results beside ours: `--list` names them (ID, paper, setting, time); `outrun
    /// reproduce ID...` (or --all) computes ours and prints, per number, the paper's value, ours,
    /// the tolerance and a verdict (reproduced / deviates, and why / not applicable). A result
    /// measured on the emulated cluster (root, minutes) runs when named, and with --all only
    /// given --emulated. Exits 1 when a number deviates with no known reason or a result cannot
    /// be computed (docs/results/README.md).
    Reproduce {
        /// Result IDs (`--list` names them).
        #[arg(conflicts_with = "all")]
        ids: Vec<String>,
        /// List every result, one a line, ID first.
        #[arg(long, conflicts_with_all = ["ids", "all", "json", "markdown", "quick", "emulated"])]
        list: bool,
        /// Every result.
        #[arg(long)]
        all: bool,
        /// With --all, also measure the results taken on the emulated cluster (root; each names
        /// its time in --list); without it they are listed as not run.
        #[arg(long)]
        emulated: bool,
        /// Fewer simulated trials and draws (the tolerances stay the same).
        #[arg(long)]
        quick: bool,
        /// Print the outcomes as JSON.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print a markdown document (docs/results/README.md).
        #[arg(long)]
        markdown: bool,
    },
    /// The papers' analytic results as commands, for parameters beyond the papers' tables.
    #[command(subcommand)]
    Theory(TheoryCmd),
    /// Micro-benchmarks (used by `make bench`).
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Compare finished runs: tables (stdout), and with --out a report.md with plots.
    Report {
        /// Run directories (or directories containing run directories).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Run directory whose times are the baseline for speedups (default: the run slowest by
        /// its mean iteration time; speedups compare mean iteration times, and times to a target).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Also report the time and iterations to reach this normalized error (synthetic data).
        #[arg(long, allow_negative_numbers = true)]
        target_error: Option<f64>,
        /// Also report the time and iterations to reach this held-out accuracy, a fraction
        /// (data.test_path).
        #[arg(long, allow_negative_numbers = true)]
        target_accuracy: Option<f64>,
        /// Also report the time and iterations to reach this loss (iterations.csv's `loss`).
        #[arg(long, allow_negative_numbers = true)]
        target_loss: Option<f64>,
        /// Write report.md and PNG/SVG plots into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Iterations per timeline plot (a window around each run's slowest iteration); 0: no
        /// timeline plots.
        #[arg(long, default_value_t = 3)]
        timeline: usize,
    },
    /// Who each run waited for: per worker, the time its parent waited with that worker's
    /// result the last it needed, how often it straggled, its late results and compute time.
    Blame {
        /// Run directories (or directories containing run directories).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Workers shown per run, most blamed first (the table; --json lists every worker).
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Print a JSON list instead: every worker of every run, each with its run directory.
        #[arg(long)]
        json: bool,
    },
    /// Fit straggler laws (shifted exponential, Weibull, two-state Markov) to the compute times
    /// a run logged, say how well each fits, and print a [stragglers] section to paste.
    Fit {
        /// A run directory.
        run: PathBuf,
        /// The law whose section is printed: shifted-exp, weibull or markov (default: the best
        /// fit by Kolmogorov–Smirnov distance).
        #[arg(long)]
        law: Option<String>,
        /// Print the fits as JSON instead.
        #[arg(long)]
        json: bool,
        /// Also write the run's compute times to this file as a trace
        /// (`[stragglers] model = "trace"`, `times = "compute"`) to replay in other runs.
        #[arg(long, value_name = "FILE")]
        trace: Option<PathBuf>,
    },
    /// Write RUN_DIR/trace.json, a Chrome trace-event file (open it in ui.perfetto.dev or
    /// chrome://tracing): every rank's compute, waiting and decodes, every message as an arrow.
    Trace {
        /// Run directories (or directories containing run directories: one trace per run).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Only these iterations: A..B (inclusive) or A.
        #[arg(long, value_parser = outrun_report::trace::parse_window)]
        iterations: Option<outrun_report::trace::Window>,
    },
}

/// How `outrun codedfedl-load` numbers the clients.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ClientOrder {
    /// Fastest first by E[T] (eq. 5.15).
    ExpectedTime,
    /// The order of the seed's permutations.
    Seed,
}

#[derive(Subcommand)]
enum TheoryCmd {
    /// s_κ (seed 001, Theorem 2, Table I): the arbitrary stragglers CommFR-GC (a Gaussian [s+m, m]
    /// code per group) and Ye–Abbe's Gaussian scheme tolerate while every matrix they invert has
    /// condition number at most κ, with probability at least 1 − ε.
    Sk {
        /// Workers n.
        #[arg(long)]
        n: usize,
        /// Stragglers s the code is built for.
        #[arg(long)]
        s: usize,
        /// Communication reduction m.
        #[arg(long)]
        m: usize,
        /// Largest condition number κ.
        #[arg(long, allow_negative_numbers = true, default_value_t = 1000.0)]
        kappa: f64,
        /// Failure probability ε.
        #[arg(long, allow_negative_numbers = true, default_value_t = 1e-3)]
        eps: f64,
        /// Chen–Dongarra's constant C (7 reproduces Table I; the text prints 6.414).
        #[arg(long, allow_negative_numbers = true, default_value_t = outrun_codes::theory::C_TABLE)]
        c: f64,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Average execution times of CGC, AGC and their group versions in the restart model (seed
    /// 003, Sec. VII-A, eqs. 81–92; Fig. 3 is n = 20, d = 3, t_cp = 3, t_cm = 13).
    AgcAet {
        /// Workers n.
        #[arg(long, default_value_t = 20)]
        n: usize,
        /// Parts per worker d (the stragglers tolerated are at most d − 1).
        #[arg(long, default_value_t = 3)]
        d: usize,
        /// Computation phase t_cp.
        #[arg(long, allow_negative_numbers = true, default_value_t = 3.0)]
        tcp: f64,
        /// Communication time t_cm of a whole (length-w) vector.
        #[arg(long, allow_negative_numbers = true, default_value_t = 13.0)]
        tcm: f64,
        /// Straggler probabilities, comma-separated.
        #[arg(long, default_value = "0.001,0.01,0.05,0.1,0.2,0.3,0.4,0.5")]
        p: String,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The peeling threshold of the (d_v, d_c)-regular LDPC ensemble on the erasure channel
    /// (seed 001, Remark 3: (3, 6) gives 0.4294).
    Bec {
        /// Column weight d_v (variable degree).
        #[arg(long, default_value_t = 3)]
        dv: usize,
        /// Row weight d_c (check degree).
        #[arg(long, default_value_t = 6)]
        dc: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Our all-reduce vs MPI_Allreduce (run under mpirun); prints CSV on rank 0.
    Ring {
        /// Vector sizes in bytes.
        #[arg(long, value_delimiter = ',', default_value = "1024,16384,262144,1048576,4194304,16777216,67108864")]
        sizes: Vec<usize>,
        /// Our schedules to time (scheme.algorithm's values).
        #[arg(long, value_delimiter = ',', default_value = "ring,recursive-doubling,halving-doubling,auto", value_parser = ring_algorithm)]
        algorithms: Vec<RingAlgorithm>,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Seconds per timed round (per method and size).
        #[arg(long, allow_negative_numbers = true, default_value_t = 0.3)]
        seconds: f64,
        #[arg(long, default_value_t = 200)]
        poll_us: u64,
        /// How our ranks wait between polls (engine.idle's values; auto: spin where each rank
        /// has a core, sleep where ranks outnumber cores).
        #[arg(long, default_value = "auto", value_parser = idle_mode)]
        idle: outrun_config::Idle,
    },
    /// The master–worker floor (run under mpirun, 2 ranks or more): MPI_Bcast of a model from
    /// rank 0 and MPI_Gather of every other rank's result, summed at rank 0, per iteration;
    /// prints CSV on rank 0 (rank 0's median and mean iteration).
    Floor {
        /// Doubles in the model and in each result (a scheme's model.features).
        #[arg(long, default_value_t = 5000)]
        values: usize,
        /// Iterations, no barrier between them.
        #[arg(long, default_value_t = 300)]
        iterations: usize,
    },
    /// A bulk TCP transfer timed at the receiver (checks a link's rate).
    Link {
        /// Receive one transfer on this address (host:port).
        #[arg(long, conflicts_with = "connect")]
        listen: Option<String>,
        /// Send to this address (host:port).
        #[arg(long)]
        connect: Option<String>,
        #[arg(long, default_value_t = 20)]
        mbytes: usize,
        /// (accepted for symmetry; the listener always serves one transfer)
        #[arg(long)]
        once: bool,
    },
    /// Broadcast within every sub-communicator of r + 1 ranks (run under mpirun); prints CSV.
    Groups {
        /// Groups are the subsets of r + 1 ranks.
        #[arg(long, default_value_t = 2)]
        r: usize,
        /// Doubles per broadcast.
        #[arg(long, default_value_t = 1000)]
        values: usize,
    },
    /// Gradient kernel throughput vs memory read bandwidth and vs BLAS (one core), and the
    /// read bandwidth of all cores at once; prints CSV.
    Kernel {
        #[arg(long, default_value_t = 20_000)]
        samples: usize,
        #[arg(long, default_value_t = 5000)]
        features: usize,
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// A softmax network's batch gradient vs the dgemm calls it makes on the same shapes (one
    /// thread); prints CSV.
    Mlp {
        /// Layer widths, input to output.
        #[arg(long, value_delimiter = ',', default_value = "784,200,200,10")]
        sizes: Vec<usize>,
        /// Batch sizes.
        #[arg(long, value_delimiter = ',', default_value = "64,256,1024")]
        batches: Vec<usize>,
        #[arg(long, default_value_t = 20)]
        reps: usize,
    },
    /// Robust decoding's screening (scheme.byzantine) vs the plain decode of the same results,
    /// by result length (no MPI); prints CSV.
    Screen {
        /// Workers n.
        #[arg(long, default_value_t = 8)]
        n: usize,
        /// Stragglers the code tolerates (s ≥ 2f).
        #[arg(long, default_value_t = 2)]
        s: usize,
        /// Corrupted results located.
        #[arg(long, default_value_t = 1)]
        f: usize,
        /// Result lengths (values).
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000,200000")]
        lens: Vec<usize>,
        #[arg(long, default_value_t = 9)]
        reps: usize,
    },
    /// Coded mat-vec decoding time vs r for Gaussian, systematic and LT codes, beside LAPACK's
    /// own LU of the same size (no MPI); prints CSV.
    Rows {
        /// r for the dense codes (each decodes r of 1.5r coded rows).
        #[arg(long, value_delimiter = ',', default_value = "250,500,1000,2000")]
        sizes: Vec<usize>,
        /// r for the LT code (decodes all r(1 + overhead) rows by peeling).
        #[arg(long, value_delimiter = ',', default_value = "2000,10000,50000")]
        lt_sizes: Vec<usize>,
        #[arg(long, allow_negative_numbers = true, default_value_t = 0.3)]
        overhead: f64,
        /// Received sets per size.
        #[arg(long, default_value_t = 5)]
        sets: usize,
    },
    /// CommFR-GC decoding time vs group size for Gaussian, systematic and LDPC codes (no MPI);
    /// prints CSV.
    Decode {
        /// Group sizes N (even, at least 10 for LDPC; K = N/2, ⌈N/4⌉ workers erased).
        #[arg(long, value_delimiter = ',', default_value = "12,24,48,96")]
        sizes: Vec<usize>,
        /// Gradient length (values).
        #[arg(long, default_value_t = 100_000)]
        len: usize,
        /// Arrival sets per size.
        #[arg(long, default_value_t = 20)]
        sets: usize,
    },
}

/// A failure to report: message and exit code.
struct Failure(String, u8);

/// `--idle`'s values: engine.idle's names.
fn idle_mode(name: &str) -> Result<outrun_config::Idle, String> {
    outrun_config::Idle::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = outrun_config::Idle::ALL.iter().map(|m| m.name()).collect();
        format!("`{name}`: one of {}", names.join(", "))
    })
}

/// `--algorithms`' values: scheme.algorithm's names.
fn ring_algorithm(name: &str) -> Result<RingAlgorithm, String> {
    RingAlgorithm::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = RingAlgorithm::ALL.iter().map(|a| a.name()).collect();
        format!("`{name}`: one of {}", names.join(", "))
    })
}

/// Input problems exit 2, a failed simulated run 1.
fn sim_failure(e: outrun_sim::SimError) -> Failure {
    let code = if matches!(e, outrun_sim::SimError::Run(_) | outrun_sim::SimError::Io(_)) { 1 } else { 2 };
    Failure(e.to_string(), code)
}

fn load_config(path: &Path, set: &[String]) -> Result<outrun_config::Config, Failure> {
    outrun_workloads::load_config(path, set).map_err(|e| Failure(e.to_string(), 2))
}

/// The config at `path` (with `set`) and its plan: the problem's shape read from its data, then
/// the scheme built for it.
fn resolve(path: &Path, set: &[String]) -> Result<(outrun_config::Config, outrun_plan::Plan), Failure> {
    let cfg = load_config(path, set)?;
    let shape = outrun_workloads::shape(&cfg).map_err(|e| Failure(e.to_string(), 2))?;
    let plan = outrun_workloads::plan(&cfg, shape).map_err(|e| Failure(format!("{}: {e}", path.display()), 2))?;
    Ok((cfg, plan))
}

/// Refuse a simulation whose statistics (every trial's iteration times) would not fit in
/// memory, in one line.
fn check_trials(plan: &outrun_plan::Plan, trials: usize) -> Result<(), Failure> {
    use outrun_workloads::memory::{available, human};
    let need = outrun_sim::stats_bytes(plan, trials);
    match available() {
        Some(have) if need > have / 2 => Err(Failure(
            format!(
                "--trials {trials}: {trials} trials × {} iterations keep {} of iteration times, more than half of the {} available; use fewer trials",
                plan.run.iterations,
                human(need),
                human(have)
            ),
            2,
        )),
        _ => Ok(()),
    }
}

/// Longest simulation started: one whose work, at the measured pace, would take longer is
/// refused once [`PACE_AFTER_S`] of it have run.
const MAX_SIMULATION_S: f64 = 24.0 * 3600.0;

/// Seconds of a simulation whose pace decides whether it is refused.
const PACE_AFTER_S: f64 = 5.0;

/// The pace of a long piece of work: iterations done per second since it (re)started, a line
/// every 10 s, and whether the rest would take more than [`MAX_SIMULATION_S`].
struct Pace {
    since: std::time::Instant,
    from: u64,
    last: std::time::Instant,
}

impl Pace {
    fn new() -> Pace {
        let now = std::time::Instant::now();
        Pace { since: now, from: 0, last: now }
    }

    /// Measure from now on, `done` iterations in (a phase whose pace differs ends).
    fn restart(&mut self, done: u64) {
        self.since = std::time::Instant::now();
        self.from = done;
    }

    /// Seconds per iteration so far, once [`PACE_AFTER_S`] have passed (before, too few to tell).
    fn per_iteration(&self, done: u64) -> Option<f64> {
        let elapsed = self.since.elapsed().as_secs_f64();
        (elapsed >= PACE_AFTER_S && done > self.from).then(|| elapsed / (done - self.from) as f64)
    }

    /// Whether a progress line is due (every 10 s).
    fn line_due(&mut self) -> bool {
        let due = self.last.elapsed().as_secs_f64() >= 10.0;
        if due {
            self.last = std::time::Instant::now();
        }
        due
    }
}

/// `simulate`'s watcher: a line every 10 s with the iterations done and the time left, and a
/// refusal when the rest would take more than a day at the pace so far. A written trial 0 is
/// slower than the others (it logs every rank): while it runs, only its own rest is held to the
/// limit, and the others' pace is measured from their start.
fn simulate_watch(
    plan: &outrun_plan::Plan,
    trials: usize,
    written: bool,
) -> impl FnMut(u64, u64) -> Result<(), String> {
    let asked = plan.run.iterations;
    let iterations = asked.max(1);
    let started = std::time::Instant::now();
    let mut pace = Pace::new();
    let mut in_first = written && trials > 1;
    move |done, total| {
        if in_first && done >= iterations {
            in_first = false;
            pace.restart(done);
            return Ok(());
        }
        let Some(per) = pace.per_iteration(done) else { return Ok(()) };
        let held = if in_first { iterations } else { total };
        let left = per * held.saturating_sub(done) as f64;
        if left > MAX_SIMULATION_S {
            return Err(format!(
                "--trials {trials} × run.iterations = {asked}: at {} per iteration the simulation would take {}{} more, more than a day; use fewer trials or iterations",
                seconds(per),
                sweep::minutes(left),
                if in_first { " (trial 0 alone)" } else { "" },
            ));
        }
        if pace.line_due() && done < total {
            eprintln!(
                "simulate: {done}/{total} iterations (trial {}/{trials}), elapsed {}, ~{} left{}",
                (done / iterations + 1).min(trials as u64),
                sweep::minutes(started.elapsed().as_secs_f64()),
                sweep::minutes(left),
                if in_first { " in trial 0 (it writes the run directory; the others go faster)" } else { "" },
            );
        }
        Ok(())
    }
}

/// `tune`'s watcher: as [`simulate_watch`], over every value of the key (each taken to cost what
/// the current one does).
fn tune_watch(key: &str, values: &[String], trials: usize) -> impl FnMut(usize, u64, u64) -> Result<(), String> {
    let started = std::time::Instant::now();
    let mut pace = Pace::new();
    let mut current = 0;
    let (key, values) = (key.to_string(), values.to_vec());
    move |i, done, total| {
        if i != current {
            current = i;
            pace.restart(0);
        }
        let Some(per) = pace.per_iteration(done) else { return Ok(()) };
        let rest = total.saturating_sub(done) + total.saturating_mul((values.len() - i - 1) as u64);
        let left = per * rest as f64;
        if left > MAX_SIMULATION_S {
            return Err(format!(
                "--vary {key}: {} values × {trials} trials at {} per iteration would take {} more, more than a day; use fewer values, trials or iterations",
                values.len(),
                seconds(per),
                sweep::minutes(left)
            ));
        }
        if pace.line_due() && done < total {
            eprintln!(
                "tune: {key} = {} ({}/{}), {done}/{total} iterations, elapsed {}, ~{} left",
                values[i],
                i + 1,
                values.len(),
                sweep::minutes(started.elapsed().as_secs_f64()),
                sweep::minutes(left)
            );
        }
        Ok(())
    }
}

/// A short duration with its unit (µs, ms or s).
fn seconds(s: f64) -> String {
    match s {
        s if s < 1e-3 => format!("{:.1} µs", s * 1e6),
        s if s < 1.0 => format!("{:.1} ms", s * 1e3),
        s => format!("{s:.1} s"),
    }
}

/// What rank 0 of `outrun train` resolves: the config checked for a real run, and its plan.
fn prepare(path: &Path, set: &[String], resume: Option<&Path>) -> Result<outrun_engine::Prepared, String> {
    let cfg = outrun_workloads::load_config(path, set).map_err(|e| e.to_string())?;
    cfg.validate_for_engine().map_err(|e| e.to_string())?;
    let shape = outrun_workloads::shape(&cfg).map_err(|e| e.to_string())?;
    let mut plan = outrun_workloads::plan(&cfg, shape).map_err(|e| format!("{}: {e}", path.display()))?;
    let resume = resume.map(|dir| resume_from(dir, &mut plan)).transpose()?;
    Ok(outrun_engine::Prepared { plan, config_toml: cfg.to_toml(), resume })
}

/// The checkpoint in `dir` for `plan`, which then starts at its iteration; refused when it is
/// another problem's, or already at the end.
fn resume_from(dir: &Path, plan: &mut outrun_plan::Plan) -> Result<outrun_runlog::Checkpoint, String> {
    let c = outrun_runlog::Checkpoint::read(dir)?;
    let problem = outrun_workloads::job(plan).problem();
    if !outrun_runlog::same_problem(&c.problem, &problem) {
        return Err(format!(
            "--resume {}: the checkpoint is of another problem (`{}`; this config: `{problem}`)",
            dir.display(),
            c.problem
        ));
    }
    if c.iteration >= plan.run.iterations {
        return Err(format!(
            "--resume {}: the checkpoint is after iteration {} of run.iterations = {}: nothing left to run",
            dir.display(),
            c.iteration,
            plan.run.iterations
        ));
    }
    plan.run.first = c.iteration;
    plan.run.resumed_from = Some(dir.display().to_string());
    Ok(c)
}

/// The plan of each value of `key` (`text`, a config file's in `dir`, with `set` and
/// `key=value`), or why it has none, built when the value's turn comes.
fn tune_plans<'a>(
    text: &'a str,
    dir: &'a Path,
    set: &'a [String],
    key: &'a str,
    values: &'a [String],
) -> impl Iterator<Item = (String, Result<outrun_plan::Plan, String>)> + 'a {
    let plan = move |v: &String| {
        let mut sets = set.to_vec();
        sets.push(format!("{key}={v}"));
        let cfg = outrun_config::parse_in(text, dir, &sets).map_err(|e| e.to_string())?;
        outrun_workloads::resolve(&cfg).map_err(|e| e.to_string())
    };
    values.iter().map(move |v| (v.clone(), plan(v)))
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Train { config, set, quiet, resume } => {
            let mut bar = progress::Bar::new(quiet);
            let fin = outrun_engine::train(&|| prepare(&config, &set, resume.as_deref()), &mut bar);
            match fin.result {
                // the bar printed the run's account when the summary was written
                Ok(_) => Ok(()),
                // the engine printed the error before finalizing MPI
                Err(e) => Err(Failure(String::new(), e.exit_code() as u8)),
            }
        }
        Cmd::Plan { config, set, ranks, json, job_bound } => {
            if ranks {
                println!("{}", load_config(&config, &set)?.ranks());
                return Ok(());
            }
            if job_bound {
                println!("{}", load_config(&config, &set)?.job_bound_s());
                return Ok(());
            }
            let (_, plan) = resolve(&config, &set)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&plan).expect("plan serializes"));
            } else {
                print!("{}", plan.describe());
                plan.cautions().iter().for_each(|c| eprintln!("warning: {c}"));
                let mut job = outrun_workloads::job(&plan);
                let notes =
                    job.prelude().map_or(Ok(vec![]), |p| p.notes(&plan)).map_err(|e| Failure(e.to_string(), 2))?;
                notes.iter().for_each(|l| println!("{l}"));
            }
            Ok(())
        }
        Cmd::Simulate { config, set, trials, math } => {
            let (cfg, plan) = resolve(&config, &set)?;
            let math = match math.as_str() {
                "on" => outrun_sim::Math::On,
                "off" => outrun_sim::Math::Off,
                _ => outrun_sim::Math::Auto,
            };
            let opts = outrun_sim::Options { trials, math, write: true };
            check_trials(&plan, trials)?;
            plan.cautions().iter().for_each(|c| eprintln!("warning: {c}"));
            let mut watch = simulate_watch(&plan, trials, opts.write);
            // a line every 10 s while the ranks' shares load (a coded mat-vec encodes them)
            let (started, mut pace) = (std::time::Instant::now(), Pace::new());
            let mut loaded = |r: usize, ranks: usize| {
                if pace.line_due() && r < ranks {
                    let elapsed = sweep::minutes(started.elapsed().as_secs_f64());
                    eprintln!("simulate: loading each rank's share of the data and codes: {r}/{ranks} ranks, elapsed {elapsed}");
                }
            };
            let sim = outrun_sim::simulate_with(&plan, &cfg.to_toml(), &opts, &mut watch, &mut loaded)
                .map_err(sim_failure)?;
            let st = &sim.stats;
            println!(
                "simulated {}: {} trials × {} iterations: per-iteration time mean {:.3} ms, p5 {:.3} ms, p95 {:.3} ms (virtual time)",
                plan.scheme,
                st.trials,
                st.iterations,
                st.mean_s * 1e3,
                st.p5_s * 1e3,
                st.p95_s * 1e3
            );
            // after the simulation: a refused one says only why it was refused
            let (timing, guessed) = outrun_sim::timing_line(&plan);
            if guessed {
                eprintln!(
                    "warning: timing.compute = \"real\": a simulation measures no computation, so it modelled each at timing.a = {:e} s per point; a real run's times may differ by orders of magnitude — `outrun fit RUN_DIR` on a real run prints a [stragglers] law of its measured per-point times to simulate with (or set timing.a)",
                    plan.stragglers.base_a
                );
            }
            println!("timing: {timing}");
            if let Some(n) = &sim.math_note {
                println!("note: {n}");
            }
            if let Some(d) = &sim.run_dir {
                println!("run directory (trial 0): {}", d.display());
            }
            Ok(())
        }
        Cmd::Tune { config, vary, set, trials } => {
            let text = outrun_workloads::input::read_to_string(&config)
                .map_err(|e| Failure(format!("cannot read config `{}`: {e}", config.display()), 2))?;
            let (key, spec) = vary
                .split_once('=')
                .ok_or_else(|| Failure(format!("--vary `{vary}`: use KEY=VALUES, e.g. scheme.s=0..6"), 2))?;
            let values = outrun_sim::sweep_values(spec).map_err(|e| Failure(format!("--vary {e}"), 2))?;
            if trials == 0 {
                return Err(Failure("--trials must be at least 1".into(), 2));
            }
            let dir = outrun_workloads::config_dir(&config);
            let rows = outrun_sim::tune(
                tune_plans(&text, &dir, &set, key, &values),
                trials,
                &mut tune_watch(key, &values, trials),
            )
            .map_err(|e| Failure(e, 2))?;
            // every value refused for the same reason (an unknown key, a config error): say it once
            if let [first, rest @ ..] = &rows[..] {
                if let Err(e) = &first.result {
                    if rest.iter().all(|r| r.result.as_ref().err() == Some(e)) {
                        return Err(Failure(format!("--vary {key}: {e}"), 2));
                    }
                }
            }
            println!("| {key} | mean ms/it | p5 ms/it | p95 ms/it | exact | note |");
            println!("|---|---|---|---|---|---|");
            // the exact settings' means and trial means, in the values' order
            let mut means: Vec<(f64, &str, &[f64])> = Vec::new();
            for r in &rows {
                match &r.result {
                    Ok((s, exact)) => {
                        println!(
                            "| {} | {:.3} | {:.3} | {:.3} | {} | |",
                            r.value,
                            s.mean_s * 1e3,
                            s.p5_s * 1e3,
                            s.p95_s * 1e3,
                            if *exact { "yes" } else { "no" }
                        );
                        if *exact {
                            means.push((s.mean_s, &r.value, &s.trial_means));
                        }
                    }
                    Err(e) => println!("| {} | - | - | - | - | {} |", r.value, e.replace('|', "/")),
                }
            }
            // the first of the lowest; settings the simulation cannot tell apart (a key that
            // changes no time) are a tie, not a best
            let each = if trials == 1 {
                "one trial: no spread to judge close values by".into()
            } else {
                format!("{trials} trials each")
            };
            let best = means.iter().copied().min_by(|a, b| a.0.total_cmp(&b.0));
            let tied: Vec<&str> = best
                .map(|(m, ..)| {
                    means.iter().filter(|(x, ..)| (x - m).abs() <= 1e-9 * m.abs()).map(|(_, v, _)| *v).collect()
                })
                .unwrap_or_default();
            match best {
                Some((m, ..)) if tied.len() > 1 => println!(
                    "\nno best {key}: {} tie at a mean of {:.3} ms per iteration ({each})",
                    tied.join(", "),
                    m * 1e3
                ),
                Some((m, v, t)) => {
                    println!(
                        "\npredicted best {key} = {v} (mean {:.3} ms per iteration among exact settings, {each})",
                        m * 1e3
                    );
                    // settings whose trials do not say they are slower: not ruled out
                    let close: Vec<String> = means
                        .iter()
                        .filter(|(_, w, u)| *w != v && outrun_sim::within_spread(t, u))
                        .map(|(x, w, _)| format!("{w} ({:+.1} %)", (x / m - 1.0) * 100.0))
                        .collect();
                    if !close.is_empty() {
                        println!(
                            "within the trials' spread of it: {key} = {} (their paired trial means differ from its by less than two standard errors; more --trials tell them apart)",
                            close.join(", ")
                        );
                    }
                }
                None => return Err(Failure(format!("no value of {key} gave a runnable exact setting"), 1)),
            }
            Ok(())
        }
        Cmd::Sweep { file, launcher, dry_run, base, repetitions, out } => {
            sweep::run(&sweep::Options { file, launcher, dry_run, base, repetitions, out })
        }
        Cmd::CodedfedlLoad { clients, points, delta, q, c, seed, order, json, toml } => {
            let by_time = order == ClientOrder::ExpectedTime;
            codedfedl::run(&codedfedl::Options { clients, points, delta, q, c, seed, by_time, json, toml })
        }
        Cmd::PagerankLoad { graph, config, set, servers, r, reduce, directed, json } => {
            pagerank_load(graph, config, &set, servers, r, reduce, directed, json)
        }
        Cmd::Config { config, set } => {
            print!("{}", load_config(&config, &set)?.to_toml());
            Ok(())
        }
        Cmd::Check { .. } if std::env::var_os(CHECK_CHILD).is_none() => check_in_a_child(),
        Cmd::Check { config, set, local } => {
            let (cfg, plan) = resolve(&config, &set)?;
            cfg.validate_for_engine().map_err(|e| Failure(format!("{}: {e}", config.display()), 2))?;
            let mut job = outrun_workloads::job(&plan);
            let need = job.memory(&plan).map_err(|e| Failure(e.to_string(), 2))?;
            let (largest, total) =
                (need.iter().copied().max().unwrap_or(0), need.iter().fold(0u64, |a, &b| a.saturating_add(b)));
            if let Some(have) = outrun_workloads::memory::available() {
                use outrun_workloads::memory::human;
                let (want, what) = if local {
                    (total, format!("{} for its {} ranks on this machine", human(total), plan.ranks))
                } else {
                    (largest, format!("{} on its largest rank", human(largest)))
                };
                if want > have {
                    return Err(Failure(
                        format!(
                            "{}: memory: the run needs about {what} (data held densely: {}), but {} are available (MemAvailable, or OUTRUN_MEMORY_LIMIT); use less data or more hosts",
                            config.display(),
                            job.problem(),
                            human(have)
                        ),
                        2,
                    ));
                }
            }
            plan.cautions().iter().for_each(|c| eprintln!("warning: {c}"));
            println!(
                "ok: {} — {} MPI ranks, {} workers, d = {}; memory about {} on the largest rank, {} in all",
                plan.scheme,
                plan.ranks,
                plan.workers,
                plan.samples,
                outrun_workloads::memory::human(largest),
                outrun_workloads::memory::human(total)
            );
            Ok(())
        }
        Cmd::Reproduce { ids, list, all, emulated, quick, json, markdown } => {
            reproduce::reproduce(reproduce::Options { ids, list, all, emulated, quick, json, markdown })
        }
        Cmd::Theory(TheoryCmd::Sk { n, s, m, kappa, eps, c, json }) => {
            reproduce::sk(reproduce::Sk { n, s, m, kappa, eps, c, json })
        }
        Cmd::Theory(TheoryCmd::Bec { dv, dc, json }) => reproduce::bec(dv, dc, json),
        Cmd::Theory(TheoryCmd::AgcAet { n, d, tcp, tcm, p, json }) => reproduce::agc_aet(n, d, tcp, tcm, &p, json),
        Cmd::Bench(BenchCmd::Ring { sizes, algorithms, rounds, seconds, poll_us, idle }) => {
            // every rank parses the same arguments, so every rank refuses alike before MPI starts
            if rounds == 0 || !(seconds > 0.0 && seconds <= 3600.0) || sizes.iter().any(|&b| b < 8) {
                return Err(Failure(
                    format!("bench ring: --rounds at least 1, --seconds in (0, 3600], --sizes at least 8 bytes (one f64) each (got rounds = {rounds}, seconds = {seconds}, sizes = {sizes:?})"),
                    2,
                ));
            }
            let (rank, size, idle, rows) =
                outrun_engine::bench::ring_vs_mpi(&sizes, &algorithms, rounds, seconds, poll_us, idle);
            if rank == 0 {
                eprintln!("bench ring: {size} ranks, ours waiting with engine.idle = {}", idle.name());
                println!("ranks,bytes,algorithm,reps,ring_s,mpi_allreduce_s,ratio,agree");
                for r in rows {
                    println!(
                        "{size},{},{},{},{:.9},{:.9},{:.3},{}",
                        r.bytes,
                        r.algorithm.name(),
                        r.reps,
                        r.ring_s,
                        r.mpi_s,
                        r.ring_s / r.mpi_s,
                        r.agree
                    );
                }
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Floor { values, iterations }) => {
            if values == 0 || iterations == 0 {
                return Err(Failure("bench floor: --values and --iterations must be positive".into(), 2));
            }
            let (rank, size, row) = outrun_engine::bench::master_worker_floor(values, iterations);
            if size < 2 {
                return Err(Failure("bench floor: run it under mpirun with at least 2 ranks".into(), 2));
            }
            if rank == 0 {
                println!("ranks,values,iterations,median_s,mean_s,agree");
                println!(
                    "{size},{},{},{:.9},{:.9},{}",
                    row.values, row.iterations, row.median_s, row.mean_s, row.agree
                );
            }
            if row.agree {
                Ok(())
            } else {
                Err(Failure("bench floor: a gathered sum differs from the broadcast model's".into(), 1))
            }
        }
        Cmd::Bench(BenchCmd::Link { listen, connect, mbytes, .. }) => match (listen, connect) {
            (Some(addr), None) => link::serve(&addr).map_err(|e| Failure(e, 1)),
            (None, Some(addr)) => {
                let (bytes, secs, mbs) = link::send(&addr, mbytes).map_err(|e| Failure(e, 1))?;
                println!("{bytes} bytes in {secs:.3} s: {mbs:.2} MB/s ({:.1} Mbit/s)", mbs * 8.0);
                Ok(())
            }
            _ => Err(Failure("bench link: give --listen ADDR or --connect ADDR".into(), 2)),
        },
        Cmd::Bench(BenchCmd::Kernel { samples, features, reps }) => {
            use outrun_config::Loss;
            if samples == 0 || features == 0 || reps == 0 {
                return Err(Failure("bench kernel: --samples, --features and --reps at least 1".into(), 2));
            }
            println!(
                "loss,bytes,kernel_gb_s,read_gb_s,fraction,blas_gb_s,kernel_over_blas,paced_gb_s,paced_over_kernel,cores,read_all_gb_s"
            );
            for (name, loss) in [("least-squares", Loss::LeastSquares), ("logistic", Loss::Logistic)] {
                let b = outrun_workloads::bench::kernel_vs_memory(samples, features, reps, loss);
                println!(
                    "{name},{},{:.2},{:.2},{:.3},{:.2},{:.2},{:.2},{:.2},{},{:.2}",
                    b.bytes,
                    b.kernel_gbs,
                    b.read_gbs,
                    b.kernel_gbs / b.read_gbs,
                    b.blas_gbs,
                    b.kernel_gbs / b.blas_gbs,
                    b.paced_gbs,
                    b.paced_gbs / b.kernel_gbs,
                    b.cores,
                    b.read_all_gbs
                );
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Decode { sizes, len, sets }) => {
            if len == 0 || sets == 0 {
                return Err(Failure("bench decode: --len and --sets at least 1".into(), 2));
            }
            let rows = outrun_workloads::bench::decode_times(&sizes, len, sets)
                .map_err(|e| Failure(format!("bench decode: {e}"), 2))?;
            println!("code,n,k,erased,sets,decoded,cold_ms,warm_ms,apply_ms,max_rel_err,refused");
            for r in rows {
                let refused = r.refused.map_or(String::new(), |m| format!("\"{}\"", m.replace('"', "'")));
                println!(
                    "{},{},{},{},{},{},{:.4},{:.4},{:.4},{:.1e},{refused}",
                    r.code,
                    r.n,
                    r.n / 2,
                    r.erased,
                    r.sets,
                    r.decoded,
                    r.cold_s * 1e3,
                    r.warm_s * 1e3,
                    r.apply_s * 1e3,
                    r.max_rel_err
                );
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Screen { n, s, f, lens, reps }) => {
            if n == 0 || s >= n || 2 * f > s {
                return Err(Failure(format!("bench screen: need 2f ≤ s < n (n = {n}, s = {s}, f = {f})"), 2));
            }
            if reps == 0 || lens.contains(&0) {
                return Err(Failure("bench screen: --reps and every --lens at least 1".into(), 2));
            }
            let rows = outrun_workloads::bench::screen_times(n, s, f, &lens, reps)
                .map_err(|e| Failure(format!("bench screen: {e}"), 2))?;
            println!("n,s,f,len,decode_ms,screen_clean_ms,screen_fault_ms,clean_over_decode,fault_over_decode");
            for r in rows {
                println!(
                    "{},{},{},{},{:.4},{:.4},{:.4},{:.2},{:.2}",
                    r.n,
                    r.s,
                    r.f,
                    r.len,
                    r.decode_s * 1e3,
                    r.clean_s * 1e3,
                    r.fault_s * 1e3,
                    r.clean_s / r.decode_s,
                    r.fault_s / r.decode_s
                );
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Mlp { sizes, batches, reps }) => {
            if sizes.len() < 2 || sizes.contains(&0) || batches.contains(&0) || reps == 0 {
                return Err(Failure("bench mlp: at least two positive sizes, positive batches and reps".into(), 2));
            }
            println!("sizes,batch,gflop,gradient_ms,gradient_gflops,dgemm_ms,dgemm_gflops,gradient_over_dgemm");
            let name = sizes.iter().map(ToString::to_string).collect::<Vec<_>>().join("-");
            for r in outrun_workloads::bench::mlp_rates(&sizes, &batches, reps) {
                let (g, d) = (r.flops / r.gradient_s / 1e9, r.flops / r.dgemm_s / 1e9);
                println!(
                    "{name},{},{:.4},{:.3},{g:.2},{:.3},{d:.2},{:.3}",
                    r.batch,
                    r.flops / 1e9,
                    r.gradient_s * 1e3,
                    r.dgemm_s * 1e3,
                    g / d
                );
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Rows { sizes, lt_sizes, overhead, sets }) => {
            if sizes.iter().chain(&lt_sizes).any(|&r| r < 2) || sets == 0 || overhead.is_nan() || overhead <= 0.0 {
                return Err(Failure(
                    "bench rows: sizes must be at least 2, sets at least 1, overhead positive".into(),
                    2,
                ));
            }
            outrun_codes::single_threaded_blas();
            println!("code,r,received,solved,cold_ms,apply_ms,lapack_lu_ms,max_rel_err,cond_or_growth");
            for r in outrun_workloads::bench::row_decode_times(&sizes, &lt_sizes, overhead, sets) {
                println!(
                    "{},{},{},{},{:.3},{:.3},{:.3},{:.1e},{:.1e}",
                    r.code,
                    r.r,
                    r.received,
                    r.solved,
                    r.cold_s * 1e3,
                    r.apply_s * 1e3,
                    r.lapack_s * 1e3,
                    r.max_rel_err,
                    r.cond
                );
            }
            Ok(())
        }
        Cmd::Bench(BenchCmd::Groups { r, values }) => {
            if r == 0 || values == 0 {
                return Err(Failure("bench groups: --r and --values at least 1".into(), 2));
            }
            let (rank, row) = outrun_engine::bench::group_broadcasts(r, values);
            if rank == 0 {
                println!("groups,broadcasts,values,seconds,correct");
                println!("{},{},{values},{:.6},{}", row.groups, row.broadcasts, row.seconds, row.correct);
            }
            if row.correct {
                Ok(())
            } else {
                Err(Failure("bench groups: a broadcast delivered wrong values".into(), 1))
            }
        }
        Cmd::Report { runs, baseline, target_error, target_accuracy, target_loss, out, timeline } => {
            use outrun_report::Target;
            let targets =
                [target_error.map(Target::Error), target_accuracy.map(Target::Accuracy), target_loss.map(Target::Loss)];
            let opts = outrun_report::Options {
                baseline,
                targets: targets.into_iter().flatten().collect(),
                timeline_iterations: timeline,
            };
            match out {
                Some(dir) => {
                    let md = outrun_report::write_report(&runs, &opts, &dir).map_err(|e| Failure(e.to_string(), 2))?;
                    print!("{md}");
                    eprintln!("report: {}", dir.join("report.md").display());
                }
                None => {
                    let loaded = outrun_report::load_runs(&runs).map_err(|e| Failure(e.to_string(), 2))?;
                    outrun_report::check_options(&loaded, &opts).map_err(|e| Failure(e.to_string(), 2))?;
                    for (k, group) in outrun_report::comparisons(&loaded).iter().enumerate() {
                        println!("Comparison {}: {}\n", k + 1, group[0].problem);
                        print!(
                            "{}",
                            outrun_report::table::markdown(group, &opts).map_err(|e| Failure(e.to_string(), 2))?
                        );
                        println!();
                    }
                }
            }
            Ok(())
        }
        Cmd::Blame { runs, top, json } => blame(&runs, top, json),
        Cmd::Fit { run, law, json, trace } => fit(&run, law.as_deref(), json, trace.as_deref()),
        Cmd::Trace { runs, iterations } => trace(&runs, iterations),
    }
}

/// `outrun trace`: a trace per run (a run directory with rank logs is traced even when it has
/// no summary: a killed run).
fn trace(paths: &[PathBuf], window: Option<outrun_report::trace::Window>) -> Result<(), Failure> {
    let (logged, others): (Vec<PathBuf>, Vec<PathBuf>) =
        paths.iter().cloned().partition(|p| p.join("rank-0.jsonl").is_file());
    let mut dirs = logged;
    if !others.is_empty() {
        dirs.extend(outrun_runlog::read::find_runs(&others).map_err(|e| Failure(e.to_string(), 2))?);
    }
    for dir in dirs {
        let (path, c) = outrun_report::trace::write(&dir, window).map_err(|e| Failure(e.to_string(), 2))?;
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        println!(
            "{} ({} ranks, {} slices, {} messages, {:.1} MB; open in ui.perfetto.dev or chrome://tracing)",
            path.display(),
            c.ranks,
            c.slices,
            c.flows,
            size as f64 / 1e6
        );
    }
    Ok(())
}

/// `outrun blame`: a table per run, or one JSON list of every run's workers.
fn blame(paths: &[PathBuf], top: usize, json: bool) -> Result<(), Failure> {
    if top == 0 {
        return Err(Failure("--top 0: show at least 1 worker per run".into(), 2));
    }
    let fail = |e: outrun_runlog::read::ReadError| Failure(e.to_string(), 2);
    let mut all = Vec::new();
    for dir in outrun_runlog::read::find_runs(paths).map_err(fail)? {
        let rows = outrun_report::blame::blame(&outrun_runlog::read::rank_events(&dir).map_err(fail)?);
        if json {
            let run = dir.display().to_string();
            all.extend(rows.into_iter().map(|b| {
                let mut v = serde_json::json!(b);
                v["run"] = serde_json::json!(run);
                v
            }));
        } else {
            println!("{}\n\n{}", dir.display(), outrun_report::blame::markdown(&rows, top));
        }
    }
    if json {
        println!("{}", serde_json::Value::Array(all));
    }
    Ok(())
}

/// `outrun fit`: the laws fitted to one run's compute times.
fn fit(dir: &Path, law: Option<&str>, json: bool, trace: Option<&Path>) -> Result<(), Failure> {
    use outrun_report::fit;
    if let Some(l) = law.filter(|l| !fit::LAWS.contains(l)) {
        return Err(Failure(format!("--law {l}: use one of {}", fit::LAWS.join(", ")), 2));
    }
    let events = outrun_runlog::read::rank_events(dir).map_err(|e| Failure(e.to_string(), 2))?;
    if events.is_empty() {
        // a sweep's directory, or another directory of runs: fit takes one of them
        let below = outrun_runlog::read::find_runs(&[dir.to_path_buf()]).unwrap_or_default();
        let runs = match below.as_slice() {
            [] => String::new(),
            [one] => format!("; the run below it: {}", one.display()),
            [first, ..] => format!("; {} runs below it, the first {}", below.len(), first.display()),
        };
        return Err(Failure(
            format!(
                "{}: no rank logs (rank-<r>.jsonl) here: `outrun fit` takes one run directory{runs}",
                dir.display()
            ),
            2,
        ));
    }
    if let Some(why) = fit::unfittable(&events) {
        return Err(Failure(format!("{}: {why}", dir.display()), 2));
    }
    if let Some(path) = trace {
        let text = fit::trace_csv(&events).map_err(|e| Failure(format!("{}: {e}", dir.display()), 2))?;
        outrun_report::write_whole(path, |w| w.write_all(text.as_bytes()))
            .map_err(|e| Failure(format!("--trace {e}"), 2))?;
    }
    let f = fit::fit(&fit::samples(&events)).map_err(|e| Failure(format!("{}: {e}", dir.display()), 2))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&f).expect("fits serialize"));
    } else {
        println!(
            "{}

{}",
            dir.display(),
            fit::markdown(&f, law.unwrap_or(f.best()))
        );
    }
    Ok(())
}

/// Set in the process that runs `outrun check`'s work for its parent.
const CHECK_CHILD: &str = "OUTRUN_CHECK_CHILD";

/// `outrun check` runs its work in a child process of the same arguments and vouches for what it
/// ends with: the check imports and probes a Python model's module, whose code may end the
/// process itself (`os._exit`) — the parent then says so in one line instead of leaving an
/// exit 0 (or a non-zero exit) without a word.
fn check_in_a_child() -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    use std::os::unix::process::ExitStatusExt;
    let exe = std::env::current_exe().map_err(|e| Failure(format!("cannot find outrun's own binary: {e}"), 2))?;
    let mut child = std::process::Command::new(exe);
    // the check dies with this process: killed alone (SIGKILL to its pid, as a test harness's
    // timeout or a scheduler does), it used to leave the check computing on for as long as the
    // check took (a fuzz left two for hours)
    let parent = std::process::id();
    // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
    unsafe {
        child.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // the parent may have died before the call: then nothing would send the signal
            if libc::getppid() as u32 != parent {
                libc::_exit(2);
            }
            Ok(())
        });
    }
    let out = child
        .args(std::env::args_os().skip(1))
        .env(CHECK_CHILD, "1")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Failure(format!("cannot start the check: {e}"), 2))?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    print!("{stdout}");
    let _ = std::io::stdout().flush();
    eprint!("{stderr}");
    let said = !stderr.trim().is_empty();
    let probe = "a Python model's module may have ended the process during its probe";
    match (out.status.code(), out.status.signal()) {
        (Some(0), _) if stdout.lines().any(|l| l.starts_with("ok: ")) => Ok(()),
        (Some(0), _) => Err(Failure(format!("the check ended without its verdict (exit 0): {probe}"), 2)),
        (Some(c), _) if said => Err(Failure(String::new(), u8::try_from(c).unwrap_or(2))),
        (Some(c), _) => Err(Failure(format!("the check ended with exit code {c} without a word: {probe}"), 2)),
        // the kernel's out-of-memory killer sends SIGKILL: data or a graph larger than the
        // machine, which the check builds to count, is the likelier cause
        (None, Some(9)) => Err(Failure(
            format!("the check was killed (signal 9, SIGKILL: on Linux most often the out-of-memory killer: is the data or graph larger than this machine's memory? `dmesg` says), or {probe}"),
            2,
        )),
        (None, Some(sig)) => Err(Failure(format!("the check died from signal {sig}: {probe}"), 2)),
        (None, None) => Err(Failure("the check ended without an exit code".into(), 2)),
    }
}

/// `outrun pagerank-load`: the loads of every r, from the note's formulas over the graph.
#[allow(clippy::too_many_arguments)]
fn pagerank_load(
    graph: Option<PathBuf>,
    config: Option<PathBuf>,
    set: &[String],
    servers: Option<usize>,
    r: Option<String>,
    reduce: Option<String>,
    directed: bool,
    json: bool,
) -> Result<(), Failure> {
    use outrun_codes::{binomial, loads, ReducePolicy, ShuffleAllocation};
    let input = |e: String| Failure(e, 2);
    let (loaded, cfg_servers, cfg_reduce) = match (&graph, &config) {
        (Some(path), _) => (
            outrun_workloads::graph::read_edge_list(&path.display().to_string(), directed)
                .map_err(|e| input(e.to_string()))?,
            None,
            None,
        ),
        (None, Some(c)) => {
            let cfg = load_config(c, set)?;
            let Some(pr) = cfg.pagerank() else {
                return Err(input(format!("{}: job.kind = \"{}\" is not a PageRank job", c.display(), cfg.job.name())));
            };
            let sc = cfg.scheme.pagerank().expect("validated: a PageRank job runs a PageRank scheme");
            (
                outrun_workloads::graph::load(&pr.graph, cfg.run.seed).map_err(|e| input(e.to_string()))?,
                Some(sc.servers),
                Some(sc.reduce),
            )
        }
        (None, None) => return Err(input("give --graph FILE or --config CONFIG".into())),
    };
    let k = servers.or(cfg_servers).ok_or_else(|| input("--servers: missing (the number of servers K)".into()))?;
    let policy = match reduce.as_deref() {
        Some("mod") => ReducePolicy::Modulo,
        Some(_) => ReducePolicy::Contiguous,
        None => cfg_reduce.unwrap_or(ReducePolicy::Contiguous),
    };
    let rs: Vec<usize> = match r {
        None => (1..=k).collect(),
        Some(spec) => outrun_sim::sweep_values(&spec)
            .map_err(|e| input(format!("--r {e}")))?
            .iter()
            .map(|v| v.parse::<usize>().map_err(|_| input(format!("--r: `{v}` is not a computation load (1..K)"))))
            .collect::<Result<_, _>>()?,
    };
    let g = &loaded.graph;
    let n = g.vertices();
    // what a config of these servers and loads would be refused for, as an argument's line
    let refused = |e: outrun_config::ConfigError| {
        input(e.to_string().replace("scheme.servers", "--servers").replace("scheme.r", "--r"))
    };
    let scheme = |r| outrun_config::ShuffleConfig {
        servers: k,
        r,
        reduce: policy,
        shuffle: Default::default(),
        multicast: Default::default(),
    };
    scheme(1).validate().map_err(refused)?;
    // every load checked before the table starts: a refusal is the only output
    let allocations = rs
        .into_iter()
        .map(|r| {
            let a = ShuffleAllocation::new(n, k, r, policy).map_err(|e| input(format!("--r {r}: {e}")))?;
            scheme(r).validate().map_err(refused)?;
            Ok((r, a))
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    if !json {
        println!(
            "graph: n = {n} vertices, {} values per iteration (directed edges); K = {k} servers, Reducers {}",
            g.values(),
            if policy == ReducePolicy::Modulo { "i mod K" } else { "contiguous" }
        );
        println!("| r | batches | groups | uncoded values U | L_UC | coded segments | L_C | coded bytes | uncoded bytes | gain L_UC/L_C | redistributed values |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
    }
    for (r, a) in allocations {
        let l = loads(g, &a);
        let groups = if r < k { binomial(k, r + 1) } else { 0 };
        let gain = if l.segments > 0 { format!("{:.2}", l.l_uncoded() / l.l_coded()) } else { "-".into() };
        if json {
            println!(
                "{}",
                serde_json::json!({"r": r, "servers": k, "n": n, "values": l.values, "batches": a.batches(), "groups": groups, "uncoded": l.uncoded, "l_uncoded": l.l_uncoded(),
                "segments": l.segments, "chunks": l.chunks, "l_coded": l.l_coded(), "coded_bytes": l.coded_bytes, "uncoded_bytes": l.uncoded_bytes(), "redistribution": l.redistribution})
            );
        } else {
            println!(
                "| {r} | {} | {groups} | {} | {:.6} | {} | {:.6} | {} | {} | {gain} | {} |",
                a.batches(),
                l.uncoded,
                l.l_uncoded(),
                l.segments,
                l.l_coded(),
                l.coded_bytes,
                l.uncoded_bytes(),
                l.redistribution
            );
        }
    }
    Ok(())
}

/// A Python model imports from the active virtual environment; without one, from the
/// repository's `.venv` (scripts/setup.sh makes it, with numpy) when this binary is the
/// repository's build (`<repository>/target/<profile>/outrun`) — what launch/local.sh chooses, so
/// `outrun check` on a Python config works without exporting `VIRTUAL_ENV` too.
fn default_python_env() {
    if std::env::var_os("VIRTUAL_ENV").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let Some(repo) = exe.parent().and_then(Path::parent).filter(|t| t.ends_with("target")).and_then(Path::parent)
    else {
        return;
    };
    let venv = repo.join(".venv");
    if venv.join("bin").join("python").exists() {
        // before any other thread exists (start-up); the ranks and the check's probe inherit it
        std::env::set_var("VIRTUAL_ENV", venv);
    }
}

/// A log event as the CLI's own lines read: `warning: …`, `error: …`, `info: …`, one a line.
struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// clap's message in one line: its first paragraph (what is wrong, and the lines that name it:
/// the missing arguments, the possible values), a `tip:` it gives, and a pointer to the help of
/// the command its usage line names — or of the `launcher` the user ran (`OUTRUN_LAUNCHER`,
/// which launch/local.sh sets for the check it makes of the user's arguments).
fn one_line(text: &str, launcher: Option<&str>) -> String {
    let mut paragraphs = text.split("\n\n").map(str::trim_end).filter(|p| !p.trim().is_empty());
    let mut lines = paragraphs.next().unwrap_or_default().lines();
    let mut said = lines.next().unwrap_or_default().trim_start_matches("error: ").trim_end().to_string();
    let named: Vec<&str> = lines.map(str::trim).filter(|l| !l.is_empty()).collect();
    if !named.is_empty() {
        // "… not provided:" is followed by the arguments, one a line; `[possible values: …]`
        // reads on after the value
        said = format!("{said} {}", named.join(", "));
    }
    let mut help = "`outrun --help`, or `outrun COMMAND --help`,".to_string();
    for p in paragraphs {
        for l in p.lines().map(str::trim) {
            if let Some(tip) = l.strip_prefix("tip: ") {
                said = format!("{said} ({tip})");
            } else if let Some(usage) = l.strip_prefix("Usage: ") {
                let words: Vec<&str> =
                    usage.split_whitespace().take_while(|w| !w.starts_with(['-', '<', '['])).collect();
                if !words.is_empty() {
                    help = format!("`{} --help`", words.join(" "));
                }
            }
        }
    }
    if let Some(l) = launcher {
        help = format!("`{l} --help`");
    }
    format!("error: {said} ({help} lists the arguments)")
}

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace; standard output that refuses a line
    // (`> /dev/full`, a full disk) is no bug: one line naming it, exit 1.
    std::panic::set_hook(Box::new(|info| {
        let what = info.payload().downcast_ref::<String>().map(String::as_str).unwrap_or_default();
        if let Some(e) = what.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: cannot write to standard output: {e}");
            std::process::exit(1);
        }
        eprintln!("error: internal error (a bug in outrun; please report it): {info}");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // help and version (stdout, exit 0), and the help printed when no command is given
        Err(e) if !e.use_stderr() || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            e.exit()
        }
        Err(e) => {
            let launcher = std::env::var("OUTRUN_LAUNCHER").ok().filter(|l| !l.is_empty());
            eprintln!("{}", one_line(&e.render().to_string(), launcher.as_deref()));
            return ExitCode::from(2);
        }
    };
    outrun_workloads::keep_parsed_rows();
    if !matches!(cli.cmd, Cmd::Train { .. } | Cmd::Bench(_)) {
        // `outrun report ... | head` should end quietly when the pipe closes, like other Unix
        // tools (MPI runs keep Rust's default, which ignores SIGPIPE).
        // SAFETY: setting a signal disposition at start-up, before any other thread exists.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    default_python_env();
    // OUTRUN_LOG = error | warn (default) | info | debug | trace
    let level = match std::env::var("OUTRUN_LOG").unwrap_or_default().to_ascii_lowercase().as_str() {
        "error" => tracing::Level::ERROR,
        "info" => tracing::Level::INFO,
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        _ => tracing::Level::WARN,
    };
    tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).event_format(Plain).init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg, code)) => {
            if !msg.is_empty() {
                // one line, whatever a value quoted in it holds (a newline in a config string)
                let line: String = msg
                    .trim_end()
                    .chars()
                    .flat_map(|c| match c {
                        '\t' => vec![' '],
                        c if c.is_control() => c.escape_default().collect(),
                        c => vec![c],
                    })
                    .collect();
                eprintln!("error: {line}");
            }
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// clap's messages as it renders them, each in one line that keeps what names the fault.
    #[test]
    fn clap_messages_fold_into_one_line_that_names_the_arguments() {
        let missing = "error: the following required arguments were not provided:\n  --n <N>\n  --s <S>\n  --m <M>\n\nUsage: outrun theory sk --n <N> --s <S> --m <M>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(missing, None),
            "error: the following required arguments were not provided: --n <N>, --s <S>, --m <M> (`outrun theory sk --help` lists the arguments)"
        );
        let tip = "error: unexpected argument '--sett' found\n\n  tip: a similar argument exists: '--set'\n\nUsage: outrun check --set <SECTION.KEY=VALUE> <CONFIG>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(tip, None),
            "error: unexpected argument '--sett' found (a similar argument exists: '--set') (`outrun check --help` lists the arguments)"
        );
        let values = "error: invalid value 'x' for '--reduce <REDUCE>'\n  [possible values: contiguous, mod]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(values, None),
            "error: invalid value 'x' for '--reduce <REDUCE>' [possible values: contiguous, mod] (`outrun --help`, or `outrun COMMAND --help`, lists the arguments)"
        );
        let top = "error: unrecognized subcommand 'trian'\n\n  tip: a similar subcommand exists: 'train'\n\nUsage: outrun <COMMAND>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(top, None),
            "error: unrecognized subcommand 'trian' (a similar subcommand exists: 'train') (`outrun --help` lists the arguments)"
        );
        // the launcher the user ran is the help to read
        assert!(one_line(tip, Some("launch/local.sh")).ends_with("(`launch/local.sh --help` lists the arguments)"));
    }
}
