//! Deadlines of the collect tree, shared by the MPI engine and the simulator.

/// Seconds a node at `layer` (0 = master) of a tree with `layers` layers may wait for its
/// children, from receiving the model: deeper nodes give up earlier, so a parent hears that a
/// subtree failed before its own deadline. The master gets the whole `deadline`.
pub fn wait_budget(deadline: f64, layers: usize, layer: usize) -> f64 {
    deadline * (layers + 1 - layer) as f64 / (layers + 1) as f64
}

/// Seconds a node keeps draining its children at shutdown before it gives up on them.
pub fn shutdown_grace(deadline: f64) -> f64 {
    deadline.clamp(5.0, 60.0)
}

/// Seconds a worker may wait for its parent's next message (a model, or the stop) before it
/// concludes the parent is gone: every layer above it may use its whole deadline, plus the
/// shutdown grace.
pub fn parent_silence(deadline: f64, layers: usize) -> f64 {
    deadline * (layers + 1) as f64 + shutdown_grace(deadline)
}

/// A node's patience with silence from above: [`parent_silence`] for the one node that names a
/// silent master (`first`), a shutdown grace more for every other, so that one line names it
/// and the job has ended before the others would speak.
pub fn patience(deadline: f64, layers: usize, first: bool) -> f64 {
    parent_silence(deadline, layers) + if first { 0.0 } else { shutdown_grace(deadline) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeper_nodes_give_up_first() {
        assert_eq!(wait_budget(30.0, 2, 0), 30.0);
        assert_eq!(wait_budget(30.0, 2, 1), 20.0);
        assert_eq!(wait_budget(30.0, 2, 2), 10.0);
        assert!(parent_silence(30.0, 2) > wait_budget(30.0, 2, 0));
        assert_eq!(shutdown_grace(1.0), 5.0);
        assert_eq!(patience(30.0, 2, true), parent_silence(30.0, 2));
        assert_eq!(patience(30.0, 2, false), parent_silence(30.0, 2) + 30.0);
    }
}
