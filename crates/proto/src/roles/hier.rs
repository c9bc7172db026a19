//! Hierarchical coded aggregation (thesis ch. 6; notes `seed-004-ch3-hcmm-ch6-hier.md` Part B),
//! as the combinations its pattern executes: what a client sends each helper ([`slice()`]) and how
//! the master decodes the helpers' sums ([`decode`]); which sums each helper uploads for an
//! iteration's failure table is the plan's (`outrun_plan::Hier::uploads`).
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

use outrun_codes::hier::FailureTable;
use outrun_codes::GroupDecoding;
use outrun_plan::{Hier, HierKind, Uploads};

use super::combine::{Combination, Src, Term};

/// Largest residual ‖G_T·G_T⁻¹ − I‖ accepted for an AMC decode.
const EXACT_RESIDUAL: f64 = 1e-9;

/// A client's slice for helper `helper` (0-based) from its payload (`Src::Own(0)`).
pub fn slice(hier: &Hier, helper: usize, len: usize) -> Combination {
    let term = |r: usize, coef: f64| {
        let (from, n) = hier.range(r, len);
        Term { src: Src::Own(0), from, to: 0, len: n, coef }
    };
    let terms = match hier.kind {
        HierKind::Uncoded => vec![term(0, 1.0)],
        HierKind::Arc => vec![term(helper % hier.k, 1.0)],
        HierKind::Amc => {
            let g = &hier.code.as_ref().expect("AMC has a code").g;
            (0..hier.k).map(|r| term(r, g[(r, helper)])).filter(|t| t.coef != 0.0).collect()
        }
    };
    Combination::exact(hier.part(len), terms)
}

/// The master's decode of the total payload (`len` values) from the uploads, which arrive
/// as `Src::Arrival(i)`, i = the helper's position among those with something to upload.
/// AMC's solves must be exact (residual ≤ `EXACT_RESIDUAL`); the worst condition number
/// is the combination's `cond`.
pub fn decode(hier: &Hier, table: &FailureTable, uploads: &Uploads, len: usize) -> Result<Combination, String> {
    let p = hier.part(len);
    let mut arrival = vec![usize::MAX; hier.helpers];
    for (i, h) in (0..hier.helpers).filter(|&h| !uploads[h].is_empty()).enumerate() {
        arrival[h] = i;
    }
    let mut comb = Combination::exact(len, vec![]);
    for (h, sets) in uploads.iter().enumerate() {
        for (q, set) in sets.iter().enumerate() {
            let src = Src::Arrival(arrival[h]);
            match hier.kind {
                HierKind::Uncoded => comb.terms.push(Term { src, from: q * p, to: 0, len, coef: 1.0 }),
                HierKind::Arc => {
                    let (to, n) = hier.range(h % hier.k, len);
                    comb.terms.push(Term { src, from: q * p, to, len: n, coef: 1.0 });
                }
                // a group is decoded once, from its first helper's upload
                HierKind::Amc if hier.first_k(&table[set[0]])[0] == h => {
                    amc_group(hier, &mut comb, uploads, &arrival, set, &table[set[0]], len)?;
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
    hier: &Hier,
    comb: &mut Combination,
    uploads: &Uploads,
    arrival: &[usize],
    set: &[usize],
    failed: &[usize],
    len: usize,
) -> Result<(), String> {
    let p = hier.part(len);
    let helpers = hier.first_k(failed);
    let code = hier.code.as_ref().expect("AMC has a code");
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
            let (to, n) = hier.range(r, len);
            comb.terms.push(Term { src: Src::Arrival(arrival[h]), from: q * p, to, len: n, coef: c });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::Vector;
    use outrun_codes::hier::FailureTable;

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
                        Combination::evaluate(hier.part(len), &slice(hier, h, len).terms, std::slice::from_ref(g), &[])
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
        let comb = decode(hier, table, &uploads, len).unwrap();
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
