//! `outrun`: the command line. Thin on purpose: parsing arguments, printing, exit codes; all
//! the work is in the library crates.

mod link;
mod progress;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    },
    /// Micro-benchmarks (used by `make bench`).
    #[command(subcommand)]
    Bench(BenchCmd),
    /// Compare finished runs: tables (stdout), and with --out a report.md with plots.
    Report {
        /// Run directories (or directories containing run directories).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Run directory whose times are the baseline for speedups (default: the slowest run).
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Also report the time to reach this normalized error (synthetic data).
        #[arg(long)]
        target_error: Option<f64>,
        /// Write report.md and PNG/SVG plots into this directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Iterations per timeline plot (a window around each run's slowest iteration).
        #[arg(long, default_value_t = 3)]
        timeline: usize,
    },
}

#[derive(Subcommand)]
enum BenchCmd {
    /// Our ring all-reduce vs MPI_Allreduce (run under mpirun); prints CSV on rank 0.
    Ring {
        /// Vector sizes in bytes.
        #[arg(long, value_delimiter = ',', default_value = "1024,16384,262144,1048576,4194304,16777216,67108864")]
        sizes: Vec<usize>,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Seconds per timed round (per method and size).
        #[arg(long, default_value_t = 0.3)]
        seconds: f64,
        #[arg(long, default_value_t = 200)]
        poll_us: u64,
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
    /// Gradient kernel throughput vs memory read bandwidth (one core); prints CSV.
    Kernel {
        #[arg(long, default_value_t = 20_000)]
        samples: usize,
        #[arg(long, default_value_t = 5000)]
        features: usize,
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
}

/// A failure to report: message and exit code.
struct Failure(String, u8);

fn load_config(path: &Path, set: &[String]) -> Result<outrun_plan::Config, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure(format!("cannot read config `{}`: {e}", path.display()), 2))?;
    outrun_plan::config::parse(&text, set).map_err(|e| Failure(format!("{}: {e}", path.display()), 2))
}

fn build_plan(path: &Path, set: &[String]) -> Result<outrun_plan::Plan, Failure> {
    let cfg = load_config(path, set)?;
    let (samples, _) = outrun_workloads::data::shape(&cfg).map_err(|e| Failure(e.to_string(), 2))?;
    outrun_plan::build(&cfg, samples).map_err(|e| Failure(format!("{}: {e}", path.display()), 2))
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Train { config, set } => {
            let mut bar = progress::Bar::new();
            let fin = outrun_engine::train(&config, &set, &mut bar);
            match fin.result {
                Ok(Some(s)) => {
                    println!("{}", outrun_report::one_line(&s));
                    println!("run directory: {}", s.run_dir);
                    Ok(())
                }
                Ok(None) => Ok(()),
                // the engine printed the error before finalizing MPI
                Err(e) => Err(Failure(String::new(), e.exit_code() as u8)),
            }
        }
        Cmd::Plan { config, set, ranks, json } => {
            if ranks {
                println!("{}", load_config(&config, &set)?.ranks());
                return Ok(());
            }
            let plan = build_plan(&config, &set)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&plan).expect("plan serializes"));
            } else {
                print!("{}", plan.describe());
            }
            Ok(())
        }
        Cmd::Config { config, set } => {
            print!("{}", load_config(&config, &set)?.to_toml());
            Ok(())
        }
        Cmd::Check { config, set } => {
            let plan = build_plan(&config, &set)?;
            println!("ok: {} — {} MPI ranks, {} workers, d = {}", plan.scheme.name(), plan.ranks, plan.workers, plan.samples);
            Ok(())
        }
        Cmd::Bench(BenchCmd::Ring { sizes, rounds, seconds, poll_us }) => {
            let (rank, size, rows) = outrun_engine::bench::ring_vs_mpi(&sizes, rounds, seconds, poll_us);
            if rank == 0 {
                println!("ranks,bytes,reps,ring_s,mpi_allreduce_s,ratio,agree");
                for r in rows {
                    println!("{size},{},{},{:.9},{:.9},{:.3},{}", r.bytes, r.reps, r.ring_s, r.mpi_s, r.ring_s / r.mpi_s, r.agree);
                }
            }
            Ok(())
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
            use outrun_plan::config::Loss;
            println!("loss,bytes,kernel_gb_s,read_gb_s,fraction");
            for (name, loss) in [("least-squares", Loss::LeastSquares), ("logistic", Loss::Logistic)] {
                let b = outrun_workloads::bench::kernel_vs_memory(samples, features, reps, loss);
                println!("{name},{},{:.2},{:.2},{:.3}", b.bytes, b.kernel_gbs, b.read_gbs, b.kernel_gbs / b.read_gbs);
            }
            Ok(())
        }
        Cmd::Report { runs, baseline, target_error, out, timeline } => {
            let opts = outrun_report::Options { baseline, target_error, timeline_iterations: timeline };
            match out {
                Some(dir) => {
                    let md = outrun_report::write_report(&runs, &opts, &dir).map_err(|e| Failure(e, 2))?;
                    print!("{md}");
                    eprintln!("report: {}", dir.join("report.md").display());
                }
                None => {
                    let loaded = outrun_report::load_runs(&runs).map_err(|e| Failure(e, 2))?;
                    for (k, group) in outrun_report::comparisons(&loaded).iter().enumerate() {
                        println!("Comparison {}: {}\n", k + 1, group[0].problem);
                        print!("{}", outrun_report::table::markdown(group, &opts).map_err(|e| Failure(e, 2))?);
                        println!();
                    }
                }
            }
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("OUTRUN_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg, code)) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            ExitCode::from(code)
        }
    }
}
