//! Engine errors: one line each, with the exit code and which ranks print them.

/// Why a run did not complete.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineError {
    /// Bad config, data or output directory, found during setup; every rank knows it, rank 0
    /// prints it.
    Setup(String),
    /// The run was started with the wrong number of ranks; rank 0 prints it.
    WorldSize { need: usize, got: usize, detail: String },
    /// A failure this rank detected while running (deadline, divergence, inexact decode); this
    /// rank prints it.
    Run(String),
    /// Another rank detected a failure and told this one to stop; it already printed why.
    Aborted,
}

impl EngineError {
    /// Process exit code: 2 for input errors, 1 for run failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            EngineError::Setup(_) | EngineError::WorldSize { .. } => 2,
            EngineError::Run(_) | EngineError::Aborted => 1,
        }
    }

    /// Whether rank `rank` should print this error (so each error is printed once).
    pub fn printed_by(&self, rank: usize) -> bool {
        match self {
            EngineError::Setup(_) | EngineError::WorldSize { .. } => rank == 0,
            EngineError::Run(_) => true,
            EngineError::Aborted => false,
        }
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Setup(m) | EngineError::Run(m) => f.write_str(m),
            EngineError::WorldSize { need, got, detail } => write!(
                f,
                "this run needs {need} MPI ranks ({detail}) but was started with {got}: start it with launch/local.sh, or mpirun -np {need}"
            ),
            EngineError::Aborted => f.write_str("stopped by the master after a failure"),
        }
    }
}

impl std::error::Error for EngineError {}
