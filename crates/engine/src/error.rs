//! Engine errors: one line each, with the exit code and which ranks print them.

use serde::{Deserialize, Serialize};

/// Why a run did not complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum EngineError {
    /// Bad config, data or output directory, found during setup; every rank knows it, rank 0
    /// prints it.
    #[error("{0}")]
    Setup(String),
    /// The run was started with the wrong number of ranks; rank 0 prints it.
    #[error("this run needs {need} MPI ranks ({detail}) but was started with {got}: start it with launch/local.sh, or mpirun -np {need}")]
    WorldSize {
        /// Ranks the plan needs.
        need: usize,
        /// Ranks started.
        got: usize,
        /// Who they are.
        detail: String,
    },
    /// An input problem only this rank found (its rows of the data file); this rank prints it.
    #[error("rank {rank} ({host}): {error}")]
    Local {
        /// This rank.
        rank: usize,
        /// Its host.
        host: String,
        /// What it found.
        error: String,
    },
    /// An input problem another rank found and printed.
    #[error("stopped: another rank could not start")]
    PeerSetup,
    /// A failure this rank detected while running (deadline, divergence, inexact decode); this
    /// rank prints it.
    #[error("{0}")]
    Run(String),
    /// The run directory could not be written; this rank prints it.
    #[error("cannot write to the run directory {dir}: {error}")]
    RunDir {
        /// The run directory.
        dir: String,
        /// The system's error.
        error: String,
    },
    /// Another rank detected a failure and told this one to stop; it already printed why.
    #[error("stopped by the master after a failure")]
    Aborted,
}

impl EngineError {
    /// Process exit code: 2 for input errors, 1 for run failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Setup(_)
            | EngineError::WorldSize { .. }
            | EngineError::Local { .. }
            | EngineError::PeerSetup => 2,
            EngineError::Run(_) | EngineError::RunDir { .. } | EngineError::Aborted => 1,
        }
    }

    /// Whether rank `rank` should print this error (so each error is printed once).
    pub fn printed_by(&self, rank: usize) -> bool {
        match self {
            EngineError::Setup(_) | EngineError::WorldSize { .. } => rank == 0,
            EngineError::Local { .. } | EngineError::Run(_) | EngineError::RunDir { .. } => true,
            EngineError::Aborted | EngineError::PeerSetup => false,
        }
    }
}
