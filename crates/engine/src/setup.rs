//! Run setup, before any timed work: rank 0 reads the config and the data's shape, builds the
//! plan and creates the run directory, then broadcasts all of it (so the code matrix and the
//! allocation are computed once and identical everywhere); every rank checks the world size,
//! obtains its rows, and synchronises its clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use outrun_plan::config::DataKind;
use outrun_plan::{Config, Plan};
use outrun_workloads::data::{load_all, synthetic_rows};
use outrun_workloads::Rows;
use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::protocol::DATA;
use outrun_runlog::create_run_dir;
use crate::transport::Comm;

/// Everything every rank knows after setup.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Shared {
    pub config: Config,
    pub plan: Plan,
    /// Model dimension p.
    pub features: usize,
    pub run_dir: PathBuf,
}

impl Shared {
    /// What the run's book-keeping needs.
    pub fn run_info(&self) -> outrun_runlog::RunInfo<'_> {
        let compute = match self.config.timing.compute {
            outrun_plan::config::ComputeMode::Real => "real",
            outrun_plan::config::ComputeMode::Modelled => "modelled",
        };
        outrun_runlog::RunInfo { config: &self.config, plan: &self.plan, features: self.features, run_dir: self.run_dir.clone(), compute }
    }
}

#[derive(Serialize, Deserialize)]
enum Reply {
    Ok(Box<Shared>),
    Err(String),
}

/// A rank's rows with their coefficients.
pub struct LocalData {
    pub rows: Rows,
    pub coef: Vec<f64>,
}

fn broadcast_bytes(world: &SimpleCommunicator, bytes: Option<Vec<u8>>) -> Vec<u8> {
    let root = world.process_at_rank(0);
    let mut len = bytes.as_ref().map_or(0u64, |b| b.len() as u64);
    root.broadcast_into(&mut len);
    let mut buf = bytes.unwrap_or_else(|| vec![0u8; len as usize]);
    root.broadcast_into(&mut buf[..]);
    buf
}

/// Rank 0's part: config, data shape, plan, run directory.
fn prepare(config_path: &Path, overrides: &[String]) -> Result<(Shared, Option<Rows>), String> {
    let text = std::fs::read_to_string(config_path).map_err(|e| format!("cannot read config `{}`: {e}", config_path.display()))?;
    let config = outrun_plan::config::parse(&text, overrides).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let (all, samples, features) = match config.data.kind {
        DataKind::Libsvm => {
            let rows = load_all(&config).map_err(|e| e.to_string())?;
            let (d, p) = (rows.len(), rows.p);
            (Some(rows), d, p)
        }
        _ => (None, config.data.samples.unwrap(), config.data.features.unwrap()),
    };
    let plan = outrun_plan::build(&config, samples).map_err(|e| format!("{}: {e}", config_path.display()))?;
    let run_dir = create_run_dir(Path::new(&config.run.out_dir), &config.run.name)
        .map_err(|e| format!("run.out_dir: cannot create a run directory in `{}`: {e}", config.run.out_dir))?;
    Ok((Shared { config, plan, features, run_dir }, all))
}

/// Collective setup. Returns the shared state and, on rank 0 for file data, all rows.
pub fn setup(world: &SimpleCommunicator, config_path: &Path, overrides: &[String]) -> Result<(Shared, Option<Rows>), EngineError> {
    let rank = world.rank();
    let mut all = None;
    let bytes = if rank == 0 {
        let reply = match prepare(config_path, overrides) {
            Ok((shared, rows)) => {
                all = rows;
                Reply::Ok(Box::new(shared))
            }
            Err(e) => Reply::Err(e),
        };
        Some(serde_json::to_vec(&reply).expect("setup serializes"))
    } else {
        None
    };
    let bytes = broadcast_bytes(world, bytes);
    let reply: Reply = serde_json::from_slice(&bytes).map_err(|e| EngineError::Setup(format!("corrupt setup message: {e}")))?;
    let shared = match reply {
        Reply::Ok(s) => *s,
        Reply::Err(e) => return Err(EngineError::Setup(e)),
    };
    let got = world.size() as usize;
    if got != shared.plan.ranks {
        let p = &shared.plan;
        let detail = match p.master() {
            Some(_) => format!("1 master + {} workers", p.workers),
            None => format!("{} ring workers, no master", p.workers),
        };
        return Err(EngineError::WorldSize { need: p.ranks, got, detail });
    }
    if rank != 0 {
        std::fs::create_dir_all(&shared.run_dir)
            .map_err(|e| EngineError::Setup(format!("rank {rank}: cannot create run directory {}: {e}", shared.run_dir.display())))?;
    }
    Ok((shared, all))
}

/// Obtain this rank's rows: generated locally for synthetic data, sent by rank 0 for files.
pub fn local_data(comm: &mut Comm, shared: &Shared, all: Option<&Rows>) -> LocalData {
    let cfg = &shared.config;
    let me = &shared.plan.nodes[comm.rank];
    let coef: Vec<f64> = me.data.points().map(|(_, c)| c).collect();
    let idx = me.data.points().map(|(i, _)| i);
    let rows = match cfg.data.kind {
        DataKind::Libsvm => {
            if comm.rank == 0 {
                let all = all.expect("rank 0 holds the file's rows");
                for node in &shared.plan.nodes[1..] {
                    let part = all.select(node.data.points().map(|(i, _)| i));
                    comm.isend(node.rank, DATA, Arc::new(part.x));
                    comm.isend(node.rank, DATA, Arc::new(part.y));
                }
                comm.flush_sends(std::time::Duration::from_secs(600), |_| {});
                all.select(idx)
            } else {
                let x = comm.recv_blocking(0, DATA).data;
                let y = comm.recv_blocking(0, DATA).data;
                Rows { p: shared.features, x, y }
            }
        }
        kind => synthetic_rows(kind, cfg.run.seed, shared.features, cfg.data.noise, idx),
    };
    LocalData { rows, coef }
}
