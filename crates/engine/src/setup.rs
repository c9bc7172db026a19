//! Run setup, before any timed work: rank 0 reads the config and the data's shape, checks the
//! world size, builds the plan and creates the run directory, then broadcasts all of it (so
//! the code matrix and the allocation are computed once and identical everywhere); every rank
//! then loads its own rows (generated, or streamed from the data file) and synchronises its
//! clock.

use std::path::{Path, PathBuf};

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use outrun_plan::{Config, Plan};
use outrun_runlog::create_run_dir;
use serde::{Deserialize, Serialize};

use crate::error::EngineError;

/// Everything every rank knows after setup.
#[derive(Clone, Debug)]
pub struct Shared {
    /// The resolved config.
    pub config: Config,
    /// The plan.
    pub plan: Plan,
    /// Model dimension p.
    pub features: usize,
    /// The run directory.
    pub run_dir: PathBuf,
}

impl Shared {
    /// What the run's book-keeping needs.
    pub fn run_info(&self) -> outrun_runlog::RunInfo<'_> {
        outrun_runlog::RunInfo {
            config: &self.config,
            plan: &self.plan,
            features: self.features,
            run_dir: self.run_dir.clone(),
            compute: self.config.timing.compute.name(),
        }
    }
}

/// What rank 0 broadcasts. The config travels as TOML (its own round-trip format) and the
/// plan as JSON (exact floats).
#[derive(Serialize, Deserialize)]
enum Reply {
    Ok { config: String, plan: Box<Plan>, features: usize, run_dir: PathBuf },
    Err(EngineError),
}

fn broadcast_bytes(world: &SimpleCommunicator, bytes: Option<Vec<u8>>) -> Vec<u8> {
    let root = world.process_at_rank(0);
    let mut len = bytes.as_ref().map_or(0u64, |b| b.len() as u64);
    root.broadcast_into(&mut len);
    let mut buf = bytes.unwrap_or_else(|| vec![0u8; len as usize]);
    root.broadcast_into(&mut buf[..]);
    buf
}

/// Rank 0's part: config, data shape, world size, plan, run directory (created last, so a
/// failed start leaves nothing behind).
fn prepare(config_path: &Path, overrides: &[String], world_size: usize) -> Result<Shared, EngineError> {
    let config =
        outrun_workloads::load_config(config_path, overrides).map_err(|e| EngineError::Setup(e.to_string()))?;
    config.validate_for_engine().map_err(|e| EngineError::Setup(e.to_string()))?;
    let shape = outrun_workloads::job_shape(&config).map_err(|e| EngineError::Setup(e.to_string()))?;
    let plan = outrun_plan::build(&config, shape)
        .map_err(|e| EngineError::Setup(format!("{}: {e}", config_path.display())))?;
    if world_size != plan.ranks {
        let detail = match plan.master() {
            Some(_) => format!("1 master + {} workers", plan.workers),
            None if plan.layers() == 0 && matches!(plan.pattern, outrun_plan::Pattern::Shuffle { .. }) => {
                format!("{} servers, no master", plan.workers)
            }
            None => format!("{} ring workers, no master", plan.workers),
        };
        return Err(EngineError::WorldSize { need: plan.ranks, got: world_size, detail });
    }
    let run_dir = create_run_dir(Path::new(&config.run.out_dir), &config.run.name).map_err(|e| {
        EngineError::Setup(format!("run.out_dir: cannot create a run directory in `{}`: {e}", config.run.out_dir))
    })?;
    // the launchers ask where the run directory is, to record a rank's death there
    if let Some(note) = std::env::var_os("OUTRUN_RUN_DIR_FILE") {
        let _ = std::fs::write(note, run_dir.display().to_string());
    }
    Ok(Shared { config, plan, features: shape.features, run_dir })
}

/// Collective setup: every rank gets the shared state, or the same error.
pub fn setup(world: &SimpleCommunicator, config_path: &Path, overrides: &[String]) -> Result<Shared, EngineError> {
    let rank = world.rank();
    let bytes = (rank == 0).then(|| {
        let reply = match prepare(config_path, overrides, world.size() as usize) {
            Ok(s) => Reply::Ok {
                config: s.config.to_toml(),
                plan: Box::new(s.plan),
                features: s.features,
                run_dir: s.run_dir,
            },
            Err(e) => Reply::Err(e),
        };
        serde_json::to_vec(&reply).expect("setup serializes")
    });
    let bytes = broadcast_bytes(world, bytes);
    let reply: Reply =
        serde_json::from_slice(&bytes).map_err(|e| EngineError::Setup(format!("corrupt setup message: {e}")))?;
    let (config, plan, features, run_dir) = match reply {
        Reply::Ok { config, plan, features, run_dir } => (config, plan, features, run_dir),
        Reply::Err(e) => return Err(e),
    };
    let config = outrun_plan::config::parse(&config, &[])
        .map_err(|e| EngineError::Setup(format!("corrupt setup message: {e}")))?;
    if rank != 0 {
        std::fs::create_dir_all(&run_dir).map_err(|e| {
            EngineError::Setup(format!("rank {rank}: cannot create run directory {}: {e}", run_dir.display()))
        })?;
    }
    Ok(Shared { config, plan: *plan, features, run_dir })
}
