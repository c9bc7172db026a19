//! Wait rules, shared by the MPI engine and the simulator: which children's results a parent
//! accepts for an iteration, when it has enough, and with which coefficients it combines them.
//!
//! A parent accepts the *first* `need` results for the iteration it is collecting; anything
//! else — a result for an earlier iteration, or beyond `need` — is late and is discarded by the
//! caller. A child may report that its subtree failed; a parent with too many failed children
//! can never be satisfied (`hopeless`).

use outrun_codes::combin::SurvivorSet;
use outrun_codes::{Decoder, EXACT_RESIDUAL};

use crate::plan::{Combine, Node, Plan};

/// What a child sent for an iteration.
pub enum Offer<T> {
    /// Its (coded) result.
    Result(T),
    /// Its subtree could not produce a result; the ranks it was missing.
    Failed(Vec<usize>),
    /// Anything else (e.g. it abandoned the iteration): never used.
    Other,
}

/// Whether an offered message was taken for the iteration being collected.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    Accepted,
    /// Late or surplus: the caller discards it (and counts it).
    Late,
}

/// Children's results for the iteration being collected.
pub struct Collector<T> {
    pub t: u64,
    open: bool,
    pub need: usize,
    got: Vec<Option<(f64, T)>>,
    order: Vec<usize>,
    failed: Vec<(usize, Vec<usize>)>,
}

impl<T> Collector<T> {
    /// A collector for `k` children of which `need` must answer.
    pub fn new(k: usize, need: usize) -> Self {
        Collector { t: 0, open: false, need, got: (0..k).map(|_| None).collect(), order: vec![], failed: vec![] }
    }

    /// Start collecting iteration `t` (forgets the previous one).
    pub fn begin(&mut self, t: u64) {
        self.t = t;
        self.open = true;
        self.got.iter_mut().for_each(|g| *g = None);
        self.order.clear();
        self.failed.clear();
    }

    /// Stop accepting: results for the current iteration that arrive from now on are late.
    pub fn close(&mut self) {
        self.open = false;
    }

    /// Offer child `idx`'s message for iteration `t`, arrived at time `at`.
    pub fn offer(&mut self, idx: usize, t: u64, msg: Offer<T>, at: f64) -> Taken {
        let fresh = self.open && t == self.t && self.got[idx].is_none() && !self.failed.iter().any(|(i, _)| *i == idx);
        if !fresh {
            return Taken::Late;
        }
        match msg {
            Offer::Result(v) => {
                self.got[idx] = Some((at, v));
                self.order.push(idx);
                if self.satisfied() {
                    self.open = false;
                }
                Taken::Accepted
            }
            Offer::Failed(missing) => {
                self.failed.push((idx, missing));
                Taken::Accepted
            }
            Offer::Other => Taken::Late,
        }
    }

    /// The wait rule is met.
    pub fn satisfied(&self) -> bool {
        self.order.len() >= self.need
    }

    /// Too many children failed for the rule ever to be met.
    pub fn hopeless(&self) -> bool {
        self.got.len() - self.failed.len() < self.need
    }

    /// Accepted children (indices), in arrival order.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// Child `idx`'s accepted result and its arrival time.
    pub fn got(&self, idx: usize) -> Option<&(f64, T)> {
        self.got[idx].as_ref()
    }

    /// Children that reported failed subtrees, with the ranks they were missing.
    pub fn failed(&self) -> &[(usize, Vec<usize>)] {
        &self.failed
    }
}

impl<T> Collector<T> {
    /// Why the rule is not met, for errors: the children that did not answer, and for those
    /// that reported a failed subtree, the children *they* were missing.
    pub fn describe_missing(&self, node: &Node) -> String {
        let mut parts = vec![];
        for (i, &c) in node.children.iter().enumerate() {
            if self.got(i).is_some() {
                continue;
            }
            match self.failed.iter().find(|(j, _)| *j == i) {
                Some((_, miss)) => parts.push(format!(
                    "{c} (its subtree failed: rank {c} is missing children {})",
                    miss.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
                )),
                None => parts.push(c.to_string()),
            }
        }
        parts.join(", ")
    }

    /// The one-line error of a master that could not meet its rule for iteration `t`.
    pub fn deadline_error(&self, node: &Node, scheme: &str, deadline: f64) -> String {
        let k = node.children.len();
        format!(
            "iteration {}: {scheme} needs {} of {k} results at the master but {} within run.deadline = {deadline} s; missing: workers {}",
            self.t,
            self.need,
            if self.hopeless() { format!("{} children reported failed subtrees", self.failed.len()) } else { format!("only {} arrived", self.order.len()) },
            self.describe_missing(node)
        )
    }
}

/// How the accepted children are combined.
#[derive(Clone, Debug, PartialEq)]
pub struct Combination {
    /// Coefficient per child (zero for children not used).
    pub coeffs: Vec<f64>,
    /// Decode residual ‖aB − 1‖ (0 unless decoding).
    pub residual: f64,
    /// Whether the combination is the node's full (coded) gradient.
    pub exact: bool,
    /// Fraction of the data covered (< 1 only when rescaling fewer than all children).
    pub coverage: f64,
}

/// Coefficients with which `node` combines its accepted `survivors` (child indices).
/// `decoder` is required for [`Combine::Decode`] (built from the plan's code, cached).
pub fn combination(plan: &Plan, node: &Node, survivors: &[usize], decoder: Option<&mut Decoder>) -> Combination {
    let rule = node.wait.expect("a parent has a wait rule");
    let k = node.children.len();
    let mut coeffs = vec![0.0; k];
    let (mut residual, mut coverage) = (0.0, 1.0);
    match rule.combine {
        Combine::Sum => survivors.iter().for_each(|&i| coeffs[i] = 1.0),
        Combine::Rescale => {
            let covered: usize = survivors.iter().map(|&i| plan.nodes[node.children[i]].load()).sum();
            let scale = plan.samples as f64 / covered.max(1) as f64;
            coverage = covered as f64 / plan.samples as f64;
            survivors.iter().for_each(|&i| coeffs[i] = scale);
        }
        Combine::Decode => {
            let dec = decoder.expect("decoding needs a decoder").decode(&SurvivorSet::from_indices(k, survivors));
            coeffs.copy_from_slice(&dec.coeffs);
            residual = dec.residual;
        }
    }
    let exact = match rule.combine {
        Combine::Sum => survivors.len() == k,
        Combine::Rescale => survivors.len() == k,
        Combine::Decode => residual <= EXACT_RESIDUAL,
    };
    Combination { coeffs, residual, exact, coverage }
}

/// Seconds a node at `layer` (0 = master) of a tree with `layers` layers may wait for its
/// children, from receiving the model: deeper nodes give up earlier, so a parent hears that a
/// subtree failed before its own deadline. The master gets the whole `deadline`.
pub fn wait_budget(deadline: f64, layers: usize, layer: usize) -> f64 {
    deadline * (layers + 1 - layer) as f64 / (layers + 1) as f64
}

/// The decoder a node needs, if its rule decodes.
pub fn decoder_for(plan: &Plan, node: &Node) -> Option<Decoder> {
    match node.wait.map(|w| w.combine) {
        Some(Combine::Decode) => Some(Decoder::new(plan.code.as_ref().expect("decoding needs a code").code.b.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_need_results_are_accepted_the_rest_are_late() {
        let mut c: Collector<u32> = Collector::new(4, 2);
        c.begin(7);
        assert_eq!(c.offer(2, 6, Offer::Result(1), 0.1), Taken::Late, "an earlier iteration");
        assert_eq!(c.offer(2, 7, Offer::Result(2), 0.2), Taken::Accepted);
        assert_eq!(c.offer(2, 7, Offer::Result(3), 0.3), Taken::Late, "a duplicate");
        assert_eq!(c.offer(0, 7, Offer::Other, 0.3), Taken::Late, "abandoned");
        assert!(!c.satisfied());
        assert_eq!(c.offer(0, 7, Offer::Result(4), 0.4), Taken::Accepted);
        assert!(c.satisfied());
        assert_eq!(c.offer(3, 7, Offer::Result(5), 0.5), Taken::Late, "beyond the rule");
        assert_eq!(c.order(), &[2, 0]);
        assert_eq!(c.got(0), Some(&(0.4, 4)));
    }

    #[test]
    fn failed_children_make_a_collector_hopeless() {
        let mut c: Collector<()> = Collector::new(3, 2);
        c.begin(0);
        assert_eq!(c.offer(0, 0, Offer::Failed(vec![5, 6]), 1.0), Taken::Accepted);
        assert!(!c.hopeless());
        c.offer(1, 0, Offer::Failed(vec![8]), 1.0);
        assert!(c.hopeless());
        assert_eq!(c.failed().len(), 2);
    }
}
