//! Aggregators: what a parent waits for and how it combines what it accepted. A plan names one
//! [`Rule`] per parent; [`aggregator`] builds it.

use outrun_codes::{Decoder, SurvivorSet, EXACT_RESIDUAL};
use serde::{Deserialize, Serialize};

use super::combine::{Combination, Src, Term};
use crate::plan::Plan;

/// A parent's wait rule, as stored in the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum Rule {
    /// Wait for every child; sum (uncoded).
    Sum,
    /// Use the first `need` children, summed and scaled by d / (points they cover): an estimate
    /// (ignore-stragglers), exact only when every child answered.
    Rescale {
        /// Children used.
        need: usize,
    },
    /// Any `need` children decode with the plan's code number `code` (least squares, residual
    /// checked): gradient coding, CodedReduce.
    Decode {
        /// Children needed.
        need: usize,
        /// Index into `Plan::codes`.
        code: usize,
    },
}

impl Rule {
    /// Number of children's results the rule needs (for descriptions).
    pub fn need(&self, children: usize) -> usize {
        match *self {
            Rule::Sum => children,
            Rule::Rescale { need } | Rule::Decode { need, .. } => need,
        }
    }

    /// `all 9, sum` / `first 7 of 9, decode`.
    pub fn describe(&self, children: usize) -> String {
        let how = match self {
            Rule::Sum => "sum",
            Rule::Rescale { .. } => "rescale",
            Rule::Decode { .. } => "decode",
        };
        let need = self.need(children);
        if need == children {
            format!("all {children}, {how}")
        } else {
            format!("first {need} of {children}, {how}")
        }
    }

    /// Whether the combination is the exact quantity whenever the rule is met.
    pub fn exact_by_design(&self, children: usize) -> bool {
        match *self {
            Rule::Rescale { need } => need == children,
            _ => true,
        }
    }
}

/// A parent's collection for one iteration at a time. The node protocol offers every result
/// that belongs to the iteration being collected; the aggregator decides which it uses, when it
/// has enough, and how to combine them.
pub trait Aggregator: Send {
    /// Start collecting iteration `t` (forgets the previous one).
    fn begin(&mut self, t: u64);
    /// Child `idx` sent its result for round `round`: whether it is used. Used results are
    /// numbered in the order they were accepted ([`Src::Arrival`]).
    fn offer(&mut self, idx: usize, round: u32) -> bool;
    /// Child `idx` reported that its subtree failed.
    fn fail(&mut self, idx: usize);
    /// The rule is met.
    fn satisfied(&self) -> bool;
    /// Too many children failed for the rule ever to be met.
    fn hopeless(&self) -> bool;
    /// How to combine the accepted results into `len` values.
    fn combine(&mut self) -> Combination;
    /// What the rule needs, for messages (`7 of 9 results`).
    fn needs(&self) -> String;
    /// Children's assignments to send with the model of iteration `t`, for schemes that
    /// re-assign work every iteration (none by default).
    fn assignments(&mut self, _t: u64) -> Option<Vec<Vec<u8>>> {
        None
    }
}

/// The aggregator of `rank` (which must have children) for payloads of `len` values.
pub fn aggregator(plan: &Plan, rank: usize, len: usize) -> Box<dyn Aggregator> {
    let node = &plan.nodes[rank];
    let k = node.children.len();
    let rule = node.rule.expect("a parent has a wait rule");
    let combine = match rule {
        Rule::Sum => How::Sum,
        Rule::Rescale { .. } => How::Rescale { loads: node.children.iter().map(|&c| plan.nodes[c].load()).collect(), samples: plan.samples },
        Rule::Decode { code, .. } => How::Decode(Decoder::new(plan.codes[code].code.clone())),
    };
    Box::new(Count { k, need: rule.need(k), len, how: combine, order: vec![], got: vec![false; k], failed: vec![false; k] })
}

enum How {
    Sum,
    Rescale { loads: Vec<usize>, samples: usize },
    Decode(Decoder),
}

/// The count-based rules: the first `need` distinct children's (round-0) results.
struct Count {
    k: usize,
    need: usize,
    len: usize,
    how: How,
    order: Vec<usize>,
    got: Vec<bool>,
    failed: Vec<bool>,
}

impl Aggregator for Count {
    fn begin(&mut self, _t: u64) {
        self.order.clear();
        self.got.iter_mut().for_each(|g| *g = false);
        self.failed.iter_mut().for_each(|f| *f = false);
    }

    fn offer(&mut self, idx: usize, round: u32) -> bool {
        if round != 0 || self.got[idx] || self.failed[idx] || self.satisfied() {
            return false;
        }
        self.got[idx] = true;
        self.order.push(idx);
        true
    }

    fn fail(&mut self, idx: usize) {
        if !self.got[idx] {
            self.failed[idx] = true;
        }
    }

    fn satisfied(&self) -> bool {
        self.order.len() >= self.need
    }

    fn hopeless(&self) -> bool {
        self.k - self.failed.iter().filter(|&&f| f).count() < self.need
    }

    fn combine(&mut self) -> Combination {
        let (len, k) = (self.len, self.k);
        let whole = |j: usize, coef: f64| Term::whole(Src::Arrival(j), len, coef);
        let complete = self.order.len() == k;
        let mut c = match &mut self.how {
            How::Sum => Combination { exact: complete, ..Combination::exact(len, (0..self.order.len()).map(|j| whole(j, 1.0)).collect()) },
            How::Rescale { loads, samples } => {
                let covered: usize = self.order.iter().map(|&i| loads[i]).sum();
                let scale = *samples as f64 / covered.max(1) as f64;
                Combination {
                    coverage: covered as f64 / *samples as f64,
                    exact: complete,
                    ..Combination::exact(len, (0..self.order.len()).map(|j| whole(j, scale)).collect())
                }
            }
            How::Decode(dec) => {
                let d = dec.decode(&SurvivorSet::from_indices(k, &self.order));
                let terms = self.order.iter().enumerate().filter(|(_, &i)| d.coeffs[i] != 0.0).map(|(j, &i)| whole(j, d.coeffs[i])).collect();
                Combination { residual: d.residual, exact: d.residual <= EXACT_RESIDUAL, ..Combination::exact(len, terms) }
            }
        };
        c.used = self.order.clone();
        c
    }

    fn needs(&self) -> String {
        format!("{} of {} results", self.need, self.k)
    }
}
