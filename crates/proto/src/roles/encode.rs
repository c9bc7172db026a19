//! Encoders: what a node sends up, round by round. A plan names one [`Encoding`] per node;
//! [`encoder`] builds it.

use outrun_plan::{Encoding, Plan, PlanCode};

use super::combine::{Combination, Src, Term};

/// A node's encoder.
pub trait Encoder: Send {
    /// Start iteration `t`, with this node's assignment if the scheme sent one.
    fn begin(&mut self, _t: u64, _assignment: Option<&[u8]>) {}
    /// The parts to compute this iteration, in the order [`Src::Own`] numbers them (None:
    /// all of them).
    fn select(&self) -> Option<Vec<usize>> {
        None
    }
    /// What the node was assigned (GC-DC: its cluster and position, 1-based), for its log
    /// record.
    fn note(&self) -> Option<(usize, usize)> {
        None
    }
    /// Number of rounds the node sends per iteration.
    fn rounds(&self) -> u32 {
        1
    }
    /// The message of round `r` over [`Src::Own`] parts and [`Src::Agg`].
    fn round(&self, r: u32) -> Combination;
}

/// The encoder of `rank` for payloads of `len` values.
pub fn encoder(plan: &Plan, rank: usize, len: usize) -> Box<dyn Encoder> {
    let node = &plan.nodes[rank];
    match node.send {
        Encoding::Plain => Box::new(Plain { len, own: !node.parts.is_empty(), agg: !node.children.is_empty() }),
        Encoding::Collected => Box::new(Plain { len, own: false, agg: true }),
        Encoding::Sampled => Box::new(Sampled { len, on: true }),
        Encoding::Chunked { code, column } => {
            let PlanCode::Linear { code, .. } = &plan.codes[code] else {
                panic!("a chunked encoding needs a linear code")
            };
            let r = len.div_ceil(code.dim);
            let mut terms = vec![];
            for c in 0..code.dim {
                let (from, n) = (c * r, r.min(len.saturating_sub(c * r)));
                let coef = code.g[(c, column)];
                if n > 0 && coef != 0.0 {
                    terms.push(Term { src: Src::Own(0), from, to: 0, len: n, coef });
                }
            }
            Box::new(Fixed(vec![Combination::exact(r, terms)]))
        }
        Encoding::Clustered { code, worker } => Box::new(super::clusters::Assigned::new(plan, code, worker, len)),
        Encoding::Rounds { code, worker } => {
            let PlanCode::Adaptive { code } = &plan.codes[code] else {
                panic!("a rounds encoding needs an adaptive code")
            };
            let (n, l) = (code.n, code.l);
            // AGC sends up to L rounds, CGC (its first round alone) one
            let sub = len.div_ceil(l);
            let parts = code.parts_of(worker);
            let rounds = (0..code.rounds)
                .map(|r| {
                    let mut terms = vec![];
                    for (t, &i) in parts.iter().enumerate() {
                        for m in 0..l {
                            let (from, k) = (m * sub, sub.min(len.saturating_sub(m * sub)));
                            let coef = code.b[(r * n + worker, m * n + i)];
                            if k > 0 && coef != 0.0 {
                                terms.push(Term { src: Src::Own(t), from, to: 0, len: k, coef });
                            }
                        }
                    }
                    Combination::exact(sub, terms)
                })
                .collect();
            Box::new(Fixed(rounds))
        }
    }
}

/// Messages whose combinations do not change between iterations.
struct Fixed(Vec<Combination>);

impl Encoder for Fixed {
    fn rounds(&self) -> u32 {
        self.0.len() as u32
    }
    fn round(&self, r: u32) -> Combination {
        self.0[r as usize].clone()
    }
}

struct Plain {
    len: usize,
    own: bool,
    agg: bool,
}

impl Encoder for Plain {
    fn round(&self, _r: u32) -> Combination {
        let mut terms = vec![];
        if self.own {
            terms.push(Term::whole(Src::Own(0), self.len, 1.0));
        }
        if self.agg {
            terms.push(Term::whole(Src::Agg, self.len, 1.0));
        }
        Combination::exact(self.len, terms)
    }
}

/// A federated client's encoder under client sampling: its own part when sampled, nothing else.
struct Sampled {
    len: usize,
    on: bool,
}

/// The assignment of a client the server sampled (`[1]`) or not (`[0]`).
pub(super) fn sampled_assignment(on: bool) -> Vec<u8> {
    vec![u8::from(on)]
}

impl Encoder for Sampled {
    fn begin(&mut self, _t: u64, assignment: Option<&[u8]>) {
        self.on = assignment != Some(&sampled_assignment(false)[..]);
    }
    fn select(&self) -> Option<Vec<usize>> {
        (!self.on).then(Vec::new)
    }
    fn round(&self, _r: u32) -> Combination {
        if self.on {
            Combination::exact(self.len, vec![Term::whole(Src::Own(0), self.len, 1.0)])
        } else {
            Combination::exact(0, vec![])
        }
    }
}
