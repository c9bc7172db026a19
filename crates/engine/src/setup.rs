//! Run setup, before any timed work: rank 0 resolves the config into its plan (the caller's
//! `prepare`: reading the config and the data's shape, building the plan), checks the world
//! size and creates the run directory, then broadcasts all of it (so the code matrix and the
//! allocation are computed once and identical everywhere); every rank then loads its own share
//! of the job and synchronises its clock.

use std::path::PathBuf;

use outrun_plan::{Pattern, Plan};
use outrun_runlog::Checkpoint;
use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::transport::Comm;

/// What rank 0 resolves a run into before MPI work starts: the plan (everything every rank
/// reads) and the resolved config's TOML (written to the run directory as `config.toml`).
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The plan.
    pub plan: Plan,
    /// The resolved config, as TOML.
    pub config_toml: String,
    /// The checkpoint a resumed run goes on from (`plan.run.first` is its iteration).
    pub resume: Option<Checkpoint>,
}

/// Everything every rank knows after setup.
#[derive(Clone, Debug)]
pub struct Shared {
    /// The plan.
    pub plan: Plan,
    /// The resolved config, as TOML.
    pub config_toml: String,
    /// The run directory.
    pub run_dir: PathBuf,
    /// The checkpoint every rank's job goes on from.
    pub resume: Option<Checkpoint>,
}

/// What rank 0 broadcasts: the plan as JSON (exact floats).
#[derive(Serialize, Deserialize)]
enum Reply {
    Ok { plan: Box<Plan>, config_toml: String, run_dir: PathBuf, resume: Option<Checkpoint> },
    Err(EngineError),
}

/// Rank 0's part: the plan, the world size, the run directory (created last, so a failed start
/// leaves nothing behind).
fn prepare_root(prepare: &dyn Fn() -> Result<Prepared, String>, world_size: usize) -> Result<Shared, EngineError> {
    let Prepared { plan, config_toml, resume } = prepare().map_err(EngineError::Setup)?;
    if world_size != plan.ranks {
        let detail = match plan.pattern {
            Pattern::Tree { .. } => format!("1 master + {} workers", plan.workers),
            Pattern::Shuffle { .. } => format!("{} servers, no master", plan.workers),
            Pattern::Ring { .. } => format!("{} ring workers, no master", plan.workers),
            Pattern::Hier { clients, helpers } => format!("1 master + {helpers} helpers + {clients} clients"),
        };
        return Err(EngineError::WorldSize { need: plan.ranks, got: world_size, detail });
    }
    let run_dir = outrun_driver::create_run_dir(&plan, "").map_err(EngineError::Setup)?;
    // the launchers ask where the run directory is, to record a rank's death there
    if let Some(note) = std::env::var_os("OUTRUN_RUN_DIR_FILE") {
        let _ = std::fs::write(note, run_dir.display().to_string());
    }
    Ok(Shared { plan, config_toml, run_dir, resume })
}

/// Collective setup: every rank gets the shared state, or the same error. Only rank 0 calls
/// `prepare`.
pub(crate) fn setup(comm: &mut Comm, prepare: &dyn Fn() -> Result<Prepared, String>) -> Result<Shared, EngineError> {
    let rank = comm.rank;
    let bytes = (rank == 0).then(|| {
        let reply = match prepare_root(prepare, comm.size) {
            Ok(s) => {
                Reply::Ok { plan: Box::new(s.plan), config_toml: s.config_toml, run_dir: s.run_dir, resume: s.resume }
            }
            Err(e) => Reply::Err(e),
        };
        serde_json::to_vec(&reply).expect("setup serializes")
    });
    let bytes = comm.star_broadcast("start (MPI_Init)", bytes);
    let reply: Reply =
        serde_json::from_slice(&bytes).map_err(|e| EngineError::Setup(format!("corrupt setup message: {e}")))?;
    let (plan, config_toml, run_dir, resume) = match reply {
        Reply::Ok { plan, config_toml, run_dir, resume } => (plan, config_toml, run_dir, resume),
        Reply::Err(e) => return Err(e),
    };
    if rank != 0 {
        std::fs::create_dir_all(&run_dir).map_err(|e| {
            EngineError::Setup(format!("rank {rank}: cannot create run directory {}: {e}", run_dir.display()))
        })?;
    }
    Ok(Shared { plan: *plan, config_toml, run_dir, resume })
}
