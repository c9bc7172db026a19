//! Hierarchical coded aggregation (thesis ch. 6; notes `seed-004-ch3-hcmm-ch6-hier.md` Part B),
//! as the three combinations its pattern executes: what a client sends each helper
//! ([`Hier::encode`]), which sums each helper uploads for an iteration's failure table
//! ([`Hier::uploads`]), and how the master decodes them ([`Hier::decode`]).
//!
//! A client's payload of `len` values is cut into k parts of P = ⌈len/k⌉ values (the last part
//! padded with zeros: notes pitfall 14); every slice and every upload is P values, so loads
//! counted in values over k·P are the chapter's C_EH and C_HM exactly.
//!
//! - **ARC** (`arc`): k = n_h/(s + 1); helper j holds part j mod k of every client; the first
//!   helper of r, r + k, … that received a client's part r sums it; each helper uploads one sum.
//! - **AMC** (`amc`): k = n_h − s; helper j holds column j of one k × n_h generator (systematic,
//!   Cauchy parity: any k columns are invertible) applied to every client's parts; the largest
//!   block of clients with the same failed links is summed by the block's first k helpers and
//!   decoded once, every other client's slices are forwarded by its first k helpers and decoded
//!   on their own.
//! - **Uncoded** (`hier-uncoded`): k = 1, every helper receives every client's whole payload,
//!   the first helper that received it forwards it.

use outrun_codes::hier::{check_tolerance, Amc, Arc, FailureTable, HierError};
use outrun_codes::{GroupDecoding, LinearCode};
use serde::{Deserialize, Serialize};

use super::combine::{Combination, Src, Term};

/// Which hierarchical scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HierKind {
    /// Aligned repetition coding.
    Arc,
    /// Aligned MDS coding.
    Amc,
    /// Forwarding, no code.
    Uncoded,
}

/// A hierarchical scheme's parameters: every rank builds the same combinations from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hier {
    /// The scheme.
    pub kind: HierKind,
    /// Clients n_e.
    pub clients: usize,
    /// Helpers n_h.
    pub helpers: usize,
    /// Failed links tolerated per client.
    pub s: usize,
    /// Parts k of a client's payload.
    pub k: usize,
    /// AMC's k × n_h generator (column j: helper j's coefficients of the parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<LinearCode>,
}

/// Per helper, the sets of clients whose slices it sums, one upload of P values each, in order.
pub type Uploads = Vec<Vec<Vec<usize>>>;

/// Largest residual ‖G_T·G_T⁻¹ − I‖ accepted for an AMC decode.
const EXACT_RESIDUAL: f64 = 1e-9;

impl Hier {
    /// Most clients: a helper's report and the master's instructions list them in a message
    /// header, which must stay below 64 KiB (`outrun_proto::wire`; an instruction naming every
    /// client alone is 12·n_e + 16 bytes).
    pub const MAX_CLIENTS: usize = 4096;

    /// The scheme of `kind` for `clients` clients and `helpers` helpers tolerating `s` failed
    /// links per client.
    pub fn new(kind: HierKind, clients: usize, helpers: usize, s: usize) -> Result<Self, HierError> {
        let (k, code) = match kind {
            HierKind::Arc => (Arc::new(helpers, s)?.k, None),
            HierKind::Amc => {
                let k = Amc::new(helpers, s)?.k;
                (k, Some(LinearCode::systematic(helpers, k).expect("1 ≤ k ≤ n_h")))
            }
            HierKind::Uncoded if s >= helpers => return Err(HierError::TooManyFailures(s, helpers)),
            HierKind::Uncoded => (1, None),
        };
        Ok(Hier { kind, clients, helpers, s, k, code })
    }

    /// Values of one slice (and of one upload) for payloads of `len` values: ⌈len/k⌉.
    pub fn part(&self, len: usize) -> usize {
        len.div_ceil(self.k)
    }

    /// Part `r` of a payload of `len` values: (offset, values), the last one possibly short.
    fn range(&self, r: usize, len: usize) -> (usize, usize) {
        let p = self.part(len);
        let from = (r * p).min(len);
        (from, p.min(len - from))
    }

    /// A client's slice for helper `helper` (0-based) from its payload (`Src::Own(0)`).
    pub fn encode(&self, helper: usize, len: usize) -> Combination {
        let term = |r: usize, coef: f64| {
            let (from, n) = self.range(r, len);
            Term { src: Src::Own(0), from, to: 0, len: n, coef }
        };
        let terms = match self.kind {
            HierKind::Uncoded => vec![term(0, 1.0)],
            HierKind::Arc => vec![term(helper % self.k, 1.0)],
            HierKind::Amc => {
                let g = &self.code.as_ref().expect("AMC has a code").g;
                (0..self.k).map(|r| term(r, g[(r, helper)])).filter(|t| t.coef != 0.0).collect()
            }
        };
        Combination::exact(self.part(len), terms)
    }

    /// The first k helpers (0-based) whose link from a client with failed links `failed` works.
    fn first_k(&self, failed: &[usize]) -> Vec<usize> {
        (0..self.helpers).filter(|h| !failed.contains(h)).take(self.k).collect()
    }

    /// What each helper uploads for the failure table (each client's failed helpers, 0-based),
    /// or why it cannot be served (a client with more than s failed links).
    pub fn uploads(&self, table: &FailureTable) -> Result<Uploads, HierError> {
        check_tolerance(table, self.s)?;
        let mut up: Uploads = vec![vec![]; self.helpers];
        match self.kind {
            HierKind::Arc => {
                let assignment = Arc::new(self.helpers, self.s)?.assignment(table)?;
                let mut sums = vec![vec![]; self.helpers];
                for (client, parts) in assignment.iter().enumerate() {
                    parts.iter().for_each(|&h| sums[h].push(client));
                }
                for (h, set) in sums.into_iter().enumerate().filter(|(_, set)| !set.is_empty()) {
                    up[h].push(set);
                }
            }
            HierKind::Amc => {
                let block = Amc::new(self.helpers, self.s)?.largest_block(table);
                for h in self.first_k(&table[block[0]]) {
                    up[h].push(block.clone());
                }
                for client in (0..table.len()).filter(|c| !block.contains(c)) {
                    self.first_k(&table[client]).into_iter().for_each(|h| up[h].push(vec![client]));
                }
            }
            HierKind::Uncoded => {
                for (client, failed) in table.iter().enumerate() {
                    up[self.first_k(failed)[0]].push(vec![client]);
                }
            }
        }
        Ok(up)
    }

    /// The master's decode of the total payload (`len` values) from the uploads, which arrive
    /// as `Src::Arrival(i)`, i = the helper's position among those with something to upload.
    /// AMC's solves must be exact (residual ≤ [`EXACT_RESIDUAL`]); the worst condition number
    /// is the combination's `cond`.
    pub fn decode(&self, table: &FailureTable, uploads: &Uploads, len: usize) -> Result<Combination, String> {
        let p = self.part(len);
        let mut arrival = vec![usize::MAX; self.helpers];
        for (i, h) in (0..self.helpers).filter(|&h| !uploads[h].is_empty()).enumerate() {
            arrival[h] = i;
        }
        let mut comb = Combination::exact(len, vec![]);
        for (h, sets) in uploads.iter().enumerate() {
            for (q, set) in sets.iter().enumerate() {
                let src = Src::Arrival(arrival[h]);
                match self.kind {
                    HierKind::Uncoded => comb.terms.push(Term { src, from: q * p, to: 0, len, coef: 1.0 }),
                    HierKind::Arc => {
                        let (to, n) = self.range(h % self.k, len);
                        comb.terms.push(Term { src, from: q * p, to, len: n, coef: 1.0 });
                    }
                    // a group is decoded once, from its first helper's upload
                    HierKind::Amc if self.first_k(&table[set[0]])[0] == h => {
                        self.amc_group(&mut comb, uploads, &arrival, set, &table[set[0]], len)?;
                    }
                    HierKind::Amc => {}
                }
            }
        }
        Ok(comb)
    }

    /// AMC: the terms that decode the group `set` (clients with the same failed links) from its
    /// k helpers' uploads: part r = Σ_j (G_T⁻¹)[j, r] · upload_j.
    fn amc_group(
        &self,
        comb: &mut Combination,
        uploads: &Uploads,
        arrival: &[usize],
        set: &[usize],
        failed: &[usize],
        len: usize,
    ) -> Result<(), String> {
        let p = self.part(len);
        let helpers = self.first_k(failed);
        let code = self.code.as_ref().expect("AMC has a code");
        let Some(GroupDecoding::Solve { coef, cond, residual }) = code.decoding(&helpers) else {
            return Err(format!("helpers {helpers:?} do not determine the parts"));
        };
        if residual > EXACT_RESIDUAL {
            return Err(format!(
                "decoding clients {set:?} from helpers {helpers:?} left residual {residual:.1e} (κ = {cond:.1e})"
            ));
        }
        comb.cond = comb.cond.max(cond);
        comb.residual = comb.residual.max(residual);
        for (j, &h) in helpers.iter().enumerate() {
            let q = uploads[h].iter().position(|s| s == set).expect("the group's helpers upload its sum");
            for (r, &c) in coef[j].iter().enumerate().filter(|(_, &c)| c != 0.0) {
                let (to, n) = self.range(r, len);
                comb.terms.push(Term { src: Src::Arrival(arrival[h]), from: q * p, to, len: n, coef: c });
            }
        }
        Ok(())
    }

    /// C_EH: values a client sends over k·P (n_h/k).
    pub fn c_eh(&self) -> f64 {
        self.helpers as f64 / self.k as f64
    }

    /// C_HM of the uploads: sums uploaded over k.
    pub fn c_hm(&self, uploads: &Uploads) -> f64 {
        uploads.iter().map(Vec::len).sum::<usize>() as f64 / self.k as f64
    }

    /// Expected C_HM over the failure tables with exactly s failed links per client, uniform:
    /// (value, how it was obtained).
    pub fn expected_c_hm(&self) -> (f64, String) {
        let (n, h, s) = (self.clients, self.helpers, self.s);
        match self.kind {
            HierKind::Uncoded => (n as f64, "every client forwarded".into()),
            HierKind::Arc => match outrun_codes::hier::averages(n, h, s) {
                Some((Some(f), _)) => (f.value(), format!("{f}, exact over every table")),
                _ => (outrun_codes::hier::arc_average(n, h, s), "closed form".into()),
            },
            HierKind::Amc => match outrun_codes::hier::averages(n, h, s) {
                Some((_, f)) => (f.value(), format!("{f}, exact over every table")),
                None => (outrun_codes::hier::amc_average(n, h, s), "n_e + 1 − E[M], exact".into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Vector;

    /// Every client's payload, the slices it sends, the helpers' sums and the master's decode,
    /// with vectors: the total of the clients' payloads, whatever the failures (≤ s).
    fn round_trip(hier: &Hier, table: &FailureTable, len: usize) -> (Vec<f64>, Vec<f64>, f64) {
        let payloads: Vec<Vec<f64>> = (0..hier.clients)
            .map(|c| (0..len).map(|x| ((c * 31 + x * 7) % 13) as f64 - 6.0 + 0.1 * c as f64).collect())
            .collect();
        let want: Vec<f64> = (0..len).map(|x| payloads.iter().map(|g| g[x]).sum()).collect();
        let slices: Vec<Vec<Vec<f64>>> = payloads
            .iter()
            .map(|g| {
                (0..hier.helpers)
                    .map(|h| {
                        Combination::evaluate(hier.part(len), &hier.encode(h, len).terms, std::slice::from_ref(g), &[])
                    })
                    .collect()
            })
            .collect();
        let uploads = hier.uploads(table).unwrap();
        let p = hier.part(len);
        let arrivals: Vec<Vec<f64>> = uploads
            .iter()
            .enumerate()
            .filter(|(_, sets)| !sets.is_empty())
            .map(|(h, sets)| {
                let mut body = Vec::<f64>::zeros(sets.len() * p);
                for (q, set) in sets.iter().enumerate() {
                    for &c in set {
                        assert!(!table[c].contains(&h), "helper {h} sums client {c}'s lost slice");
                        body.add_scaled(q * p, &slices[c][h], 0, p, 1.0);
                    }
                }
                body
            })
            .collect();
        let comb = hier.decode(table, &uploads, len).unwrap();
        (Combination::evaluate(len, &comb.terms, &[], &arrivals), want, hier.c_hm(&uploads))
    }

    fn table(s: &[usize]) -> FailureTable {
        s.iter().map(|&h| vec![h]).collect()
    }

    /// The §6.3 example's three failure tables (notes B.5): C_HM and exact sums.
    #[test]
    fn the_thesis_example_through_the_combinations() {
        let scenarios = [[3, 3, 3, 3], [1, 0, 3, 2], [3, 3, 2, 0]];
        for (kind, want) in [(HierKind::Arc, [1.0, 2.0, 1.5]), (HierKind::Amc, [1.0, 4.0, 3.0])] {
            let hier = Hier::new(kind, 4, 4, 1).unwrap();
            for (sc, w) in scenarios.iter().zip(want) {
                let (got, total, c_hm) = round_trip(&hier, &table(sc), 7);
                assert_eq!(c_hm, w, "{kind:?} {sc:?}");
                let err = got.iter().zip(&total).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(err < 1e-12, "{kind:?} {sc:?}: {got:?} vs {total:?}");
            }
        }
        assert_eq!(Hier::new(HierKind::Amc, 4, 4, 1).unwrap().c_eh(), 4.0 / 3.0);
        assert_eq!(Hier::new(HierKind::Arc, 4, 6, 2).unwrap().c_eh(), 3.0);
    }

    /// Notes D.14: random tables with at most s failures per client (some with fewer), every
    /// scheme recovers the sum within 1e-9 relative; loads within their bounds (D.15).
    #[test]
    fn random_tables_within_tolerance_decode_exactly() {
        let mut rng = outrun_codes::Rng::from_key(&[7, 0x41e]);
        for (clients, helpers, s) in [(5, 4, 1), (6, 6, 2), (9, 6, 1), (7, 8, 3), (12, 8, 1)] {
            for kind in [HierKind::Arc, HierKind::Amc, HierKind::Uncoded] {
                let Ok(hier) = Hier::new(kind, clients, helpers, s) else { continue };
                for _ in 0..60 {
                    let table: FailureTable = (0..clients)
                        .map(|_| {
                            let lost = rng.below(s + 1);
                            let mut f = rng.choose(helpers, lost);
                            f.sort_unstable();
                            f
                        })
                        .collect();
                    let (got, want, c_hm) = round_trip(&hier, &table, 23);
                    let norm = want.iter().map(|v| v * v).sum::<f64>().sqrt();
                    let err = got.iter().zip(&want).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt() / norm;
                    assert!(err < 1e-9, "{kind:?} ({clients},{helpers},{s}) {table:?}: {err:e}");
                    let bound = match kind {
                        HierKind::Arc => (s + 1) as f64,
                        _ => clients as f64,
                    };
                    assert!((1.0..=bound).contains(&c_hm), "{kind:?}: C_HM {c_hm}");
                }
            }
        }
    }

    #[test]
    fn more_failures_than_s_name_the_client() {
        let hier = Hier::new(HierKind::Amc, 3, 4, 1).unwrap();
        let err = hier.uploads(&vec![vec![0], vec![1, 3], vec![]]).unwrap_err();
        assert_eq!(err.to_string(), "client 1 lost its links to helpers [1, 3]: more than s = 1 failed links");
    }
}
