//! Hierarchical coded gradient aggregation (thesis ch. 6; notes `seed-004-ch3-hcmm-ch6-hier.md`
//! Part B): n_e clients reach a master through n_h helpers; every client→helper link may fail,
//! up to s per client. Clients split their gradient into k parts and send helper j one coded
//! slice; helpers sum what the master assigns them and upload.
//!
//! - **ARC** (aligned repetition, [`Arc`]): k = n_h/(s + 1), helper j holds part j mod k of every
//!   client; for each (client, part) the first helper holding it, in the order r, r + k, …, that
//!   received it is assigned; C_EH = s + 1, C_HM^f = (helpers with an assignment)/k.
//! - **AMC** (aligned MDS, [`Amc`]): k = n_h − s, one n_h × k Vandermonde generator for every
//!   client; the largest block of clients with the same failed links is summed by its helpers and
//!   decoded once, every other client's slices are forwarded; C_EH = n_h/(n_h − s), C_HM^f =
//!   n_e − M + 1 (M the block's size).
//!
//! Loads are normalised by p (the gradient's length). [`averages`] enumerates all C(n_h, s)^{n_e}
//! tables with exactly s failures per client and returns exact fractions; [`arc_average`] is the
//! closed form and [`expected_max_occupancy`] gives AMC's average for sizes beyond enumeration.
//!
//! ```
//! use outrun_codes::hier::{Amc, Arc};
//!
//! // the thesis's §6.3 example: 4 clients, 4 helpers, s = 1; each client's failed helper
//! let table = vec![vec![3], vec![3], vec![2], vec![0]];
//! assert_eq!(Arc::new(4, 1).unwrap().c_hm(&table).unwrap(), (3, 2)); // 1.5
//! assert_eq!(Amc::new(4, 1).unwrap().c_hm(&table), 3);
//! ```

use crate::combin::{binomial, combinations};
use crate::linalg::{lstsq, Matrix};

/// Why a hierarchical scheme cannot be built or cannot serve a failure table.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum HierError {
    /// ARC needs (s + 1) | n_h.
    #[error("s + 1 = {0} must divide the number of helpers n_h = {1} (ARC repeats each of n_h/(s+1) parts on s + 1 helpers)")]
    NotDivisible(usize, usize),
    /// s must be below n_h.
    #[error("s = {0} must be less than the number of helpers n_h = {1}")]
    TooManyFailures(usize, usize),
    /// A client lost more links than the scheme tolerates.
    #[error("client {client} lost its links to helpers {helpers:?}: more than s = {s} failed links")]
    TooMany {
        /// The client (0-based).
        client: usize,
        /// Its failed helpers (0-based).
        helpers: Vec<usize>,
        /// The tolerance.
        s: usize,
    },
    /// A client lost every helper holding one of its parts.
    #[error("client {client} lost its links to helpers {helpers:?}: no helper that holds its part {part} received it (more than s = {s} failures)")]
    Lost {
        /// The client (0-based).
        client: usize,
        /// Its failed helpers (0-based).
        helpers: Vec<usize>,
        /// The part nobody received.
        part: usize,
        /// The tolerance.
        s: usize,
    },
}

/// Failed helpers (0-based) of each client.
pub type FailureTable = Vec<Vec<usize>>;

/// The first client of `table` with more than `s` failed links, as an error.
pub fn check_tolerance(table: &FailureTable, s: usize) -> Result<(), HierError> {
    match table.iter().position(|f| f.len() > s) {
        Some(client) => Err(HierError::TooMany { client, helpers: table[client].clone(), s }),
        None => Ok(()),
    }
}

/// Aligned repetition coding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arc {
    /// Helpers n_h.
    pub helpers: usize,
    /// Failed links tolerated per client.
    pub s: usize,
    /// Parts k = n_h/(s + 1).
    pub k: usize,
}

impl Arc {
    /// ARC over `helpers` helpers tolerating `s` failed links per client.
    pub fn new(helpers: usize, s: usize) -> Result<Self, HierError> {
        if s >= helpers {
            return Err(HierError::TooManyFailures(s, helpers));
        }
        if !helpers.is_multiple_of(s + 1) {
            return Err(HierError::NotDivisible(s + 1, helpers));
        }
        Ok(Arc { helpers, s, k: helpers / (s + 1) })
    }

    /// C_EH = n_h/k = s + 1.
    pub fn c_eh(&self) -> usize {
        self.s + 1
    }

    /// For each client and part, the helper assigned to upload it: the first of r, r + k, …
    /// whose link from the client did not fail.
    pub fn assignment(&self, table: &FailureTable) -> Result<Vec<Vec<usize>>, HierError> {
        table
            .iter()
            .enumerate()
            .map(|(client, failed)| {
                (0..self.k)
                    .map(|part| {
                        (0..=self.s)
                            .map(|q| part + q * self.k)
                            .find(|h| !failed.contains(h))
                            .ok_or_else(|| HierError::Lost { client, helpers: failed.clone(), part, s: self.s })
                    })
                    .collect()
            })
            .collect()
    }

    /// Helpers with at least one assignment (each uploads one sum of p/k values).
    pub fn uploads(&self, table: &FailureTable) -> Result<usize, HierError> {
        let mut used = vec![false; self.helpers];
        self.assignment(table)?.iter().flatten().for_each(|&h| used[h] = true);
        Ok(used.iter().filter(|&&u| u).count())
    }

    /// C_HM^f as the fraction (uploads, k).
    pub fn c_hm(&self, table: &FailureTable) -> Result<(usize, usize), HierError> {
        Ok((self.uploads(table)?, self.k))
    }
}

/// Aligned MDS coding with the Vandermonde generator of nodes `a` (row j = [1, a_j, a_j², …]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amc {
    /// Helpers n_h.
    pub helpers: usize,
    /// Failed links tolerated per client.
    pub s: usize,
    /// Parts k = n_h − s.
    pub k: usize,
}

impl Amc {
    /// AMC over `helpers` helpers tolerating `s` failed links per client.
    pub fn new(helpers: usize, s: usize) -> Result<Self, HierError> {
        if s >= helpers {
            return Err(HierError::TooManyFailures(s, helpers));
        }
        Ok(Amc { helpers, s, k: helpers - s })
    }

    /// C_EH = n_h/(n_h − s), as a fraction.
    pub fn c_eh(&self) -> (usize, usize) {
        (self.helpers, self.k)
    }

    /// The largest block of clients whose failed links are the same (the first such block, by
    /// its first client, among equals).
    pub fn largest_block(&self, table: &FailureTable) -> Vec<usize> {
        let key = |f: &Vec<usize>| {
            let mut f = f.clone();
            f.sort_unstable();
            f
        };
        let mut best: Vec<usize> = vec![];
        for i in 0..table.len() {
            let block: Vec<usize> = (0..table.len()).filter(|&j| key(&table[j]) == key(&table[i])).collect();
            if block.len() > best.len() {
                best = block;
            }
        }
        best
    }

    /// C_HM^f = n_e − M + 1 (the block's k sums, and k slices of each other client, p/k each).
    pub fn c_hm(&self, table: &FailureTable) -> usize {
        table.len() - self.largest_block(table).len() + 1
    }

    /// The master's decode of Σ_i g_i from the slices `c[i][j]` (client i's slice for helper j,
    /// p/k values each) under `table`, with nodes `a`: the block's helpers' sums decoded once,
    /// every other client's surviving slices decoded separately (least squares on the k × k
    /// Vandermonde rows of its first k surviving helpers). Returns the gradient (k·p/k values)
    /// and the number of p/k-value messages the master received.
    pub fn decode(&self, a: &[f64], table: &FailureTable, c: &[Vec<Vec<f64>>]) -> (Vec<f64>, usize) {
        let part = c[0][0].len();
        let mut total = vec![0.0; self.k * part];
        let block = self.largest_block(table);
        let mut messages = 0;
        let mut add = |clients: &[usize], failed: &[usize]| {
            let helpers: Vec<usize> = (0..self.helpers).filter(|h| !failed.contains(h)).take(self.k).collect();
            let v = Matrix::from_shape_fn((self.k, self.k), |(row, r)| a[helpers[row]].powi(r as i32));
            for x in 0..part {
                let rhs: ndarray::Array1<f64> =
                    helpers.iter().map(|&h| clients.iter().map(|&i| c[i][h][x]).sum()).collect();
                let parts = lstsq(v.view(), rhs.view()).x;
                for r in 0..self.k {
                    total[r * part + x] += parts[r];
                }
            }
            messages += helpers.len();
        };
        add(&block, &table[block[0]]);
        for i in (0..table.len()).filter(|i| !block.contains(i)) {
            add(&[i], &table[i]);
        }
        (total, messages)
    }
}

/// Client i's slices for `helpers` helpers: `c[j] = Σ_r a_j^r · g[r·len/k .. (r+1)·len/k]`.
pub fn amc_encode(a: &[f64], k: usize, g: &[f64]) -> Vec<Vec<f64>> {
    let part = g.len() / k;
    a.iter().map(|&aj| (0..part).map(|x| (0..k).map(|r| aj.powi(r as i32) * g[r * part + x]).sum()).collect()).collect()
}

/// An exact fraction, reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frac {
    /// Numerator.
    pub num: u128,
    /// Denominator.
    pub den: u128,
}

impl Frac {
    /// `num/den`, reduced.
    pub fn new(num: u128, den: u128) -> Self {
        let g = gcd(num, den).max(1);
        Frac { num: num / g, den: den / g }
    }

    /// Its value.
    pub fn value(&self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl std::fmt::Display for Frac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The most tables [`averages`] enumerates.
pub const MAX_TABLES: u128 = 10_000_000;

/// Exact averages of ARC's (if (s + 1) | n_h) and AMC's C_HM over all C(n_h, s)^{n_e} tables
/// with exactly s failed links per client; None beyond [`MAX_TABLES`] tables.
pub fn averages(clients: usize, helpers: usize, s: usize) -> Option<(Option<Frac>, Frac)> {
    let sets: Vec<Vec<usize>> = combinations(helpers, s).collect();
    let tables = (sets.len() as u128).checked_pow(clients as u32)?;
    if tables > MAX_TABLES {
        return None;
    }
    let arc = Arc::new(helpers, s).ok();
    let amc = Amc::new(helpers, s).ok()?;
    let (mut arc_sum, mut amc_sum) = (0u128, 0u128);
    let mut digits = vec![0usize; clients];
    loop {
        let table: FailureTable = digits.iter().map(|&d| sets[d].clone()).collect();
        if let Some(a) = &arc {
            arc_sum += a.uploads(&table).expect("exactly s failures") as u128;
        }
        amc_sum += amc.c_hm(&table) as u128;
        // next table (mixed radix)
        let Some(i) = digits.iter().position(|&d| d + 1 < sets.len()) else { break };
        digits[i] += 1;
        digits[..i].iter_mut().for_each(|d| *d = 0);
    }
    let arc = arc.map(|a| Frac::new(arc_sum, a.k as u128 * tables));
    Some((arc, Frac::new(amc_sum, tables)))
}

/// ARC's average C_HM in closed form: Σ_{q=1}^{s+1} [1 − (1 − p_q)^{n_e}], p_q = C(n_h − q,
/// s − q + 1)/C(n_h, s) (notes B.3).
pub fn arc_average(clients: usize, helpers: usize, s: usize) -> f64 {
    let all = binomial(helpers, s) as f64;
    (1..=s + 1)
        .map(|q| {
            let p = binomial(helpers - q, s + 1 - q) as f64 / all;
            1.0 - (1.0 - p).powi(clients as i32)
        })
        .sum()
}

/// E\[M\], the expected largest bin occupancy when `balls` balls fall uniformly into `bins` bins:
/// Σ_{m ≥ 1} P(M ≥ m), P(M ≤ m) counted by a recursion over bins (labelled balls).
pub fn expected_max_occupancy(balls: usize, bins: usize) -> f64 {
    // P_b(n): n balls in b bins, none holding more than m; the last bin's count j is
    // Binomial(n, 1/b): P_b(n) = Σ_{j ≤ m} C(n, j) (1/b)^j ((b−1)/b)^{n−j} P_{b−1}(n − j)
    // C(n, j) in floating point (C(100, 50) ≈ 1e29 is beyond 64-bit integers)
    let choose = |n: usize, j: usize| (0..j).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    let at_most = |m: usize| -> f64 {
        let mut p = vec![0.0; balls + 1];
        p[..=m.min(balls)].iter_mut().for_each(|v| *v = 1.0); // one bin holds n ≤ m
        for b in 2..=bins {
            let (x, y) = (1.0 / b as f64, (b - 1) as f64 / b as f64);
            let prev = p.clone();
            for n in 0..=balls {
                p[n] = (0..=m.min(n))
                    .map(|j| choose(n, j) * x.powi(j as i32) * y.powi((n - j) as i32) * prev[n - j])
                    .sum();
            }
        }
        p[balls]
    };
    (1..=balls).map(|m| 1.0 - at_most(m - 1)).sum()
}

/// AMC's average C_HM = n_e + 1 − E\[M\] with C(n_h, s) bins.
pub fn amc_average(clients: usize, helpers: usize, s: usize) -> f64 {
    clients as f64 + 1.0 - expected_max_occupancy(clients, binomial(helpers, s) as usize)
}

/// The thesis's bound on AMC's average (6.16): n_e − n_e/C(n_h, n_h − s) + 1.
pub fn amc_bound(clients: usize, helpers: usize, s: usize) -> f64 {
    clients as f64 - clients as f64 / binomial(helpers, helpers - s) as f64 + 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The §6.3 scenarios (notes B.5), each client's failed helper, 0-based.
    const SCENARIOS: [[usize; 4]; 3] = [[3, 3, 3, 3], [1, 0, 3, 2], [3, 3, 2, 0]];

    fn table(s: &[usize]) -> FailureTable {
        s.iter().map(|&h| vec![h]).collect()
    }

    #[test]
    fn the_thesis_example_loads() {
        let (arc, amc) = (Arc::new(4, 1).unwrap(), Amc::new(4, 1).unwrap());
        assert_eq!((arc.k, arc.c_eh(), amc.k, amc.c_eh()), (2, 2, 3, (4, 3)));
        let arcs: Vec<(usize, usize)> = SCENARIOS.iter().map(|s| arc.c_hm(&table(s)).unwrap()).collect();
        assert_eq!(arcs, vec![(2, 2), (4, 2), (3, 2)]); // 1, 2, 1.5
        let amcs: Vec<usize> = SCENARIOS.iter().map(|s| amc.c_hm(&table(s))).collect();
        assert_eq!(amcs, vec![1, 4, 3]);
        // scenario 3: helpers 0, 1, 2 upload (1.5 = 3/2)
        assert_eq!(
            arc.assignment(&table(&SCENARIOS[2])).unwrap(),
            vec![vec![0, 1], vec![0, 1], vec![0, 1], vec![2, 1]]
        );
    }

    #[test]
    fn the_numeric_amc_decode() {
        let amc = Amc::new(4, 1).unwrap();
        let a = [1.0, 2.0, 3.0, 4.0];
        let g = [
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
            vec![2.0, 0.0, 2.0, 0.0, 2.0, 0.0],
            vec![1.0; 6],
        ];
        let c: Vec<Vec<Vec<f64>>> = g.iter().map(|gi| amc_encode(&a, 3, gi)).collect();
        assert_eq!(c[0], vec![vec![9.0, 12.0], vec![27.0, 34.0], vec![55.0, 68.0], vec![93.0, 114.0]]);
        let (total, messages) = amc.decode(&a, &table(&SCENARIOS[2]), &c);
        let want = [4.0, 4.0, 6.0, 6.0, 8.0, 8.0];
        assert!(total.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-9), "{total:?}");
        assert_eq!(messages, 9); // C_HM^f = 9 · (1/3) = 3
    }

    #[test]
    fn exhaustive_averages_are_the_notes_fractions() {
        let (arc, amc) = averages(4, 4, 1).unwrap();
        assert_eq!((arc.unwrap().to_string(), amc.to_string()), ("215/128".into(), "23/8".into()));
        let (arc, amc) = averages(4, 6, 2).unwrap();
        assert_eq!((arc.unwrap().to_string(), amc.to_string()), ("32731/16875".into(), "12251/3375".into()));
        let (arc, amc) = averages(3, 4, 1).unwrap();
        assert_eq!((arc.unwrap().to_string(), amc.to_string()), ("25/16".into(), "37/16".into()));
        // the closed form agrees with the enumeration
        assert!((arc_average(4, 4, 1) - 215.0 / 128.0).abs() < 1e-12);
        assert!((arc_average(4, 6, 2) - 32731.0 / 16875.0).abs() < 1e-12);
        assert!((amc_average(4, 6, 2) - 12251.0 / 3375.0).abs() < 1e-9);
    }

    #[test]
    fn larger_cases_from_the_closed_forms() {
        assert!((expected_max_occupancy(100, 6) - 21.996994).abs() < 1e-6);
        assert!((amc_average(100, 6, 1) - 79.003006).abs() < 1e-6);
        assert!((amc_average(20, 4, 1) - 13.617474).abs() < 1e-6);
        assert!((amc_bound(100, 6, 1) - 84.333333).abs() < 1e-6);
        assert!((arc_average(20, 4, 1) - 1.996829).abs() < 1e-6);
        assert!((arc_average(100, 6, 2) - 2.998991).abs() < 1e-6);
    }

    #[test]
    fn more_failures_than_s_name_the_client() {
        let arc = Arc::new(4, 1).unwrap();
        let err = arc.assignment(&vec![vec![3], vec![0, 2]]).unwrap_err();
        assert_eq!(err.to_string(), "client 1 lost its links to helpers [0, 2]: no helper that holds its part 0 received it (more than s = 1 failures)");
        assert_eq!(Arc::new(6, 2).unwrap().k, 2);
        assert!(matches!(Arc::new(6, 3), Err(HierError::NotDivisible(4, 6))));
    }
}
