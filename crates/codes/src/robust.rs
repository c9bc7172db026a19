//! Locating corrupted results from a gradient code's redundancy (robust decoding).
//!
//! Honest results of the rows `R` of a code `B` (n × n) are `M_R = B_R·G`, G the partial
//! gradients (one row per part): every column of `M_R` lies in the column space of `B_R`. A
//! result replaced by anything else leaves it, unless the set has no redundancy left. So a
//! parent that received `|R|` results, at most `f` of them corrupted, looks for the smallest set
//! `F` (|F| ≤ f) whose removal leaves results *consistent* — their syndrome `Nᵀ·M_{R∖F}` is zero
//! to round-off, N an orthonormal basis of the left null space of `B_{R∖F}` — and decodable.
//!
//! Why any consistent `S = R∖F` decodes the true sum when `|R| ≥ n − s + 2f` (s: the stragglers
//! the code tolerates): S holds at least `|R| − 2f ≥ n − s` honest results `D`, which decode
//! (`a·B_D = 1`). S consistent means `M_S = B_S·G'` for some G', so the honest `M_D = B_D·G =
//! B_D·G'` and the sums agree: `1·G = a·B_D·G' = 1·G'`, which is what any decoding of S gives.
//! Hence the wait rule `n − s + 2f` and the condition `s ≥ 2f` (DRACO's and the coding theorist's
//! "2·errors + erasures < distance").
//!
//! ```
//! use outrun_codes::{robust_screen, GradientCode};
//!
//! // fractional repetition, 6 workers in groups of 3 (s = 2): worker 2 sends a wrong value
//! let code = GradientCode::fractional(6, 2).unwrap();
//! let (g1, g2) = (vec![1.0, 2.0], vec![-3.0, 0.5]);
//! let honest = |i: usize| if i < 3 { g1.clone() } else { g2.clone() };
//! let mut sent: Vec<Vec<f64>> = (0..6).map(honest).collect();
//! sent[1] = vec![100.0, -7.0];
//! let values: Vec<&[f64]> = sent.iter().map(|v| &v[..]).collect();
//! let found = robust_screen(&code.b, &[0, 1, 2, 3, 4, 5], &values, 1).unwrap();
//! assert_eq!(found.excluded, vec![1]);
//! assert!(found.before > 0.1 && found.after < 1e-12);
//! ```

use ndarray::{ArrayView2, Axis};
use ndarray_linalg::{JobSvd, SVDDC};

use crate::combin::combinations;
use crate::decode::decode;
use crate::linalg::{single_threaded_blas, Matrix, RANK_TOL};

/// A set of results is consistent when its relative syndrome (‖Nᵀ·M‖ / ‖M‖) is at most this:
/// honest results differ from exact consistency by round-off (1e-15 … 1e-12 seen), a corrupted
/// one by its own size relative to the rest (≥ 1e-3 unless the corruption is negligible).
pub const CONSISTENT: f64 = 1e-7;

/// What the screening kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Screened {
    /// Positions (into the rows given) of the results excluded as corrupted, ascending.
    pub excluded: Vec<usize>,
    /// Relative syndrome of all the results given (on the located sample of coordinates, for
    /// long vectors).
    pub before: f64,
    /// Relative syndrome of those kept.
    pub after: f64,
}

/// No set of the results, with at most `f` excluded, is consistent and decodable: more than `f`
/// are corrupted, or too few arrived to tell. Carries the smallest relative syndrome seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inconsistent {
    /// The smallest relative syndrome of a decodable set tried (∞ if none was decodable).
    pub best: f64,
}

/// Screen the results `values` of the code rows `rows` (distinct; same order) for at most `f`
/// corrupted ones: the first exclusion of the smallest size (sets in lexicographic order) that
/// leaves a consistent, decodable set. Any such set decodes the true sum when `rows` has at least
/// n − s + 2f results (module docs), so the search stops there: with one corrupted result among
/// n, about n/2 sets are checked. With `f = 0`, only checks that the whole set is consistent. `b` is a
/// gradient code (decodable: `a·B = 1` solvable); see [`robust_screen_with`] for other codes.
pub fn robust_screen(b: &Matrix, rows: &[usize], values: &[&[f64]], f: usize) -> Result<Screened, Inconsistent> {
    robust_screen_with(b, rows, values, f, &|kept| decode(b, kept).is_exact())
}

/// [`robust_screen`] for any linear code whose results are `M_R = B_R·C` (the rows of `b` are the
/// senders' coefficients: a gradient code's B, a linear code's Gᵀ), with its own test of which
/// sets of rows decode.
pub fn robust_screen_with(
    b: &Matrix,
    rows: &[usize],
    values: &[&[f64]],
    f: usize,
    decodable: &dyn Fn(&[usize]) -> bool,
) -> Result<Screened, Inconsistent> {
    assert_eq!(rows.len(), values.len(), "one result per row");
    let len = values.first().map_or(0, |v| v.len());
    if len > 2 * SAMPLE {
        // locate on every stride-th coordinate, then check the kept set on all of them: a
        // corruption the sample misses fails that check, and the full search runs instead
        let stride = len.div_ceil(SAMPLE);
        let sampled: Vec<Vec<f64>> = values.iter().map(|v| v.iter().step_by(stride).copied().collect()).collect();
        let refs: Vec<&[f64]> = sampled.iter().map(Vec::as_slice).collect();
        if let Ok(s) = search(b, rows, &refs, f, decodable) {
            let (kept_rows, kept_values) = keep(rows, values, &s.excluded);
            if let Some(after) = syndrome(b, &kept_rows, &kept_values).filter(|&a| a <= CONSISTENT) {
                return Ok(Screened { after, ..s });
            }
        }
    }
    search(b, rows, values, f, decodable)
}

/// The rows and values left once the positions `excluded` are taken out.
fn keep<'a>(rows: &[usize], values: &[&'a [f64]], excluded: &[usize]) -> (Vec<usize>, Vec<&'a [f64]>) {
    (0..rows.len()).filter(|j| !excluded.contains(j)).map(|j| (rows[j], values[j])).unzip()
}

/// Values longer than twice this are located on about this many of their coordinates first.
const SAMPLE: usize = 2048;

/// The search of [`robust_screen_with`] over exclusions, smallest first, on these values.
fn search(
    b: &Matrix,
    rows: &[usize],
    values: &[&[f64]],
    f: usize,
    decodable: &dyn Fn(&[usize]) -> bool,
) -> Result<Screened, Inconsistent> {
    let before = syndrome(b, rows, values).unwrap_or(f64::INFINITY);
    let mut best = f64::INFINITY;
    for k in 0..=f.min(rows.len()) {
        for excluded in combinations(rows.len(), k) {
            let (kept_rows, kept_values) = keep(rows, values, &excluded);
            if !decodable(&kept_rows) {
                continue;
            }
            let Some(syn) = syndrome(b, &kept_rows, &kept_values) else { continue };
            best = best.min(syn);
            if syn <= CONSISTENT {
                return Ok(Screened { excluded, before, after: syn });
            }
        }
    }
    Err(Inconsistent { best })
}

/// ‖Nᵀ·M‖_F / ‖M‖_F for the results `values` of `rows`, N an orthonormal basis of the left null
/// space of `B_rows`; None when the rows have no redundancy (nothing can be checked).
fn syndrome(b: &Matrix, rows: &[usize], values: &[&[f64]]) -> Option<f64> {
    let null = left_null(b.select(Axis(0), rows).view())?;
    let len = values.first().map_or(0, |v| v.len());
    let total: f64 = values.iter().map(|v| v.iter().map(|x| x * x).sum::<f64>()).sum();
    if total == 0.0 {
        return Some(0.0);
    }
    let mut y = vec![0.0; len];
    let mut sum = 0.0;
    for u in null.columns() {
        y.fill(0.0);
        for (&c, v) in u.iter().zip(values) {
            y.iter_mut().zip(v.iter()).for_each(|(acc, x)| *acc += c * x);
        }
        sum += y.iter().map(|x| x * x).sum::<f64>();
    }
    Some((sum / total).sqrt())
}

/// An orthonormal basis (columns) of `{u : uᵀ·a = 0}`, a being m × n; None when it is empty.
fn left_null(a: ArrayView2<f64>) -> Option<Matrix> {
    let m = a.nrows();
    if m == 0 {
        return None;
    }
    single_threaded_blas();
    let (u, s, _) = a.as_standard_layout().into_owned().svddc(JobSvd::All).expect("LAPACK gesdd");
    let u = u.expect("U requested");
    let smax = s.first().copied().unwrap_or(0.0);
    let rank = if smax > 0.0 { s.iter().take_while(|&&v| v > RANK_TOL * smax).count() } else { 0 };
    (rank < m).then(|| u.slice(ndarray::s![.., rank..]).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GradientCode, Rng};

    /// The honest results B·G of a code for random partial gradients G (n × p).
    fn honest(code: &GradientCode, p: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = Rng::from_key(&[seed]);
        let g = Matrix::from_shape_fn((code.n, p), |_| rng.normal());
        let m = code.b.dot(&g);
        m.rows().into_iter().map(|r| r.to_vec()).collect()
    }

    fn screen(code: &GradientCode, rows: &[usize], sent: &[Vec<f64>], f: usize) -> Result<Screened, Inconsistent> {
        let values: Vec<&[f64]> = rows.iter().map(|&i| &sent[i][..]).collect();
        robust_screen(&code.b, rows, &values, f)
    }

    #[test]
    fn cyclic_codes_locate_one_corrupted_result_among_any_n_minus_s_plus_2f() {
        // n = 8, s = 3 = 2f + 1: one straggler and one corrupted result tolerated
        let (code, _) = GradientCode::cyclic(8, 3, 5, 10).unwrap();
        let good = honest(&code, 40, 1);
        for straggler in 0..8 {
            let rows: Vec<usize> = (0..8).filter(|&i| i != straggler).collect();
            assert_eq!(screen(&code, &rows, &good, 1).unwrap().excluded, Vec::<usize>::new());
            for (pos, &bad) in rows.iter().enumerate() {
                for corrupt in [-1.0, 0.0, 3.0] {
                    let mut sent = good.clone();
                    sent[bad].iter_mut().for_each(|v| *v = if corrupt == 0.0 { 10.0 } else { *v * corrupt });
                    let found = screen(&code, &rows, &sent, 1).unwrap();
                    assert_eq!(found.excluded, vec![pos], "straggler {straggler}, corrupted {bad}");
                    assert!(found.before > 1e-3 && found.after < 1e-10, "{found:?}");
                }
            }
        }
    }

    #[test]
    fn two_corrupted_results_are_found_with_f_2_and_refused_with_f_1() {
        let (code, _) = GradientCode::cyclic(9, 4, 3, 10).unwrap();
        let mut sent = honest(&code, 25, 2);
        sent[2].iter_mut().for_each(|v| *v = -*v);
        sent[6].iter_mut().for_each(|v| *v += 1.0);
        let rows: Vec<usize> = (0..9).collect();
        assert_eq!(screen(&code, &rows, &sent, 2).unwrap().excluded, vec![2, 6]);
        let err = screen(&code, &rows, &sent, 1).unwrap_err();
        assert!(err.best > 1e-3, "{err:?}");
    }

    #[test]
    fn fractional_repetition_needs_a_majority_per_group() {
        // groups of 3 (s = 2), f = 1: one wrong copy per group is out-voted
        let code = GradientCode::fractional(9, 2).unwrap();
        let mut sent = honest(&code, 10, 3);
        sent[4] = vec![10.0; 10];
        let rows: Vec<usize> = (0..9).collect();
        assert_eq!(screen(&code, &rows, &sent, 1).unwrap().excluded, vec![4]);
        // with a straggler beside it (8 of 9 < n − s + 2f), copies 4 and 5 tie: the wait rule
        // never screens so few, since either exclusion is consistent
        let rows: Vec<usize> = (0..9).filter(|&i| i != 3).collect();
        assert!(screen(&code, &rows, &sent, 1).is_ok_and(|f| f.excluded.len() == 1));
        // two different wrong copies in one group of three, f = 1: refused rather than decoded
        // wrong (two equal wrong copies would out-vote the right one: beyond f, corrupted results
        // that agree with each other cannot be told from honest ones)
        sent[5] = vec![20.0; 10];
        assert!(screen(&code, &(0..9).collect::<Vec<_>>(), &sent, 1).is_err());
    }

    #[test]
    fn long_vectors_are_located_on_a_sample_and_checked_on_every_coordinate() {
        let (code, _) = GradientCode::cyclic(8, 2, 5, 10).unwrap();
        let good = honest(&code, 10_000, 6);
        let rows: Vec<usize> = (0..8).collect();
        // a Gaussian-like corruption everywhere: found on the sample
        let mut sent = good.clone();
        sent[5].iter_mut().for_each(|v| *v = -*v);
        assert_eq!(screen(&code, &rows, &sent, 1).unwrap().excluded, vec![5]);
        // one coordinate the sample skips (stride 5: coordinate 1): the check on all of them
        // catches it and the full search locates it
        let mut sent = good.clone();
        sent[2][1] += 100.0;
        let found = screen(&code, &rows, &sent, 1).unwrap();
        assert_eq!(found.excluded, vec![2]);
        assert!(found.after < 1e-10, "{found:?}");
    }

    #[test]
    fn the_kept_results_decode_the_true_sum() {
        let (code, _) = GradientCode::cyclic(7, 2, 9, 10).unwrap();
        let mut rng = Rng::from_key(&[4]);
        let g = Matrix::from_shape_fn((7, 6), |_| rng.normal());
        let truth = g.sum_axis(Axis(0));
        let m = code.b.dot(&g);
        let mut sent: Vec<Vec<f64>> = m.rows().into_iter().map(|r| r.to_vec()).collect();
        sent[3].iter_mut().for_each(|v| *v = 7.0 * rng.normal());
        let rows: Vec<usize> = (0..7).collect();
        let found = screen(&code, &rows, &sent, 1).unwrap();
        assert_eq!(found.excluded, vec![3]);
        let kept: Vec<usize> = rows.iter().copied().filter(|&i| i != 3).collect();
        let d = decode(&code.b, &kept);
        let sum: Vec<f64> = (0..6).map(|c| kept.iter().map(|&i| d.coeffs[i] * sent[i][c]).sum::<f64>()).collect();
        let err = sum.iter().zip(truth.iter()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(err < 1e-10, "{err}");
    }
}
