//! Deterministic random streams keyed by `(seed, domain, ids...)`.
//!
//! The bits come from `rand_chacha`'s ChaCha12, whose output is specified and portable. The
//! transforms to normal and exponential variates are written here with the `libm` crate's
//! functions (compiled into the binary) instead of `rand_distr`'s, which call the host C
//! library's `exp`/`ln`: synthetic data rows and injected delays are drawn independently on
//! every rank, and they must be bit-identical on every host running the same binary
//! (`docs/architecture.md`, "Why these choices"). Draws made once, on rank 0, and broadcast (the
//! random matrices of gradient codes) use `rand_distr` through [`Rng`]'s `RngCore` impl.
//!
//! The golden values in the tests pin the streams: a change of generator is a visible change.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

/// Domain separators, so that streams for different purposes never overlap.
pub mod domain {
    /// Feature rows of a synthetic data set, keyed by row index.
    pub const FEATURES: u64 = 0x6665_6174_7572_6573;
    /// Label noise of a synthetic data set, keyed by row index.
    pub const NOISE: u64 = 0x6e6f_6973_6500_0001;
    /// The true model θ* of a synthetic data set.
    pub const THETA_STAR: u64 = 0x7468_6574_612a_0001;
    /// Random draws of a gradient code's construction, keyed by draw index.
    pub const CODE: u64 = 0x636f_6465_0000_0001;
    /// Straggler injection, keyed by worker and iteration.
    pub const STRAGGLER: u64 = 0x7374_7261_6767_6c72;
    /// State transitions of stateful straggler processes, keyed by worker and iteration.
    pub const PROCESS: u64 = 0x7072_6f63_6573_7301;
    /// Screening of decoders on sampled survivor sets.
    pub const SCREEN: u64 = 0x7363_7265_656e_0001;
    /// The circular shifts of a clustered code's A_cluster.
    pub const CLUSTER: u64 = 0x636c_7573_7465_7201;
    /// Generated graphs (PageRank) and their vertex permutation.
    pub const GRAPH: u64 = 0x6772_6170_6800_0001;
    /// A network's initial parameters, keyed by layer.
    pub const INIT: u64 = 0x696e_6974_0000_0001;
    /// Mini-batches: the order of a stratum's rows in an epoch, keyed by stratum and epoch.
    pub const BATCH: u64 = 0x6261_7463_6800_0001;
    /// Random Fourier features: Ω (keyed by input feature) and δ.
    pub const RFF: u64 = 0x7266_6600_0000_0001;
    /// Value faults: which workers are faulty (`count`), whether one misbehaves in an
    /// iteration, and its noise, keyed by worker, iteration and part.
    pub const FAULT: u64 = 0x6661_756c_7400_0001;
    /// The order of a data set's rows (`data.order = "shuffle"`).
    pub const SHUFFLE: u64 = 0x7368_7566_666c_0001;
    /// The order of a data set's label-sorted shards (`data.order = "shards"`).
    pub const SHARDS: u64 = 0x7368_6172_6473_0001;
    /// The rows held out as the test set (`data.test_fraction`).
    pub const SPLIT: u64 = 0x7370_6c69_7400_0001;
    /// Link faults: whether a link fails, and a message's transmissions, keyed by worker,
    /// iteration and message.
    pub const LINK: u64 = 0x6c69_6e6b_0000_0001;
    /// Federated learning: a client's local mini-batches, keyed by rank, round and step.
    pub const LOCAL: u64 = 0x6c6f_6361_6c00_0001;
    /// Federated learning: the server's samples of the clients' data (DiverseFL, FLTrust),
    /// keyed by part and label; resampling's groups, keyed by round.
    pub const SAMPLE: u64 = 0x7361_6d70_6c65_0001;
    /// CodedFedL: a client's private sample of its rows and its private encoding matrix G_j,
    /// keyed by worker.
    pub const PARITY: u64 = 0x7061_7269_7479_0001;
}

/// One step of SplitMix64; used to expand keys into generator seeds.
#[inline]
pub fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A ChaCha12 stream with the variates outrun needs.
#[derive(Clone, Debug)]
pub struct Rng {
    inner: ChaCha12Rng,
    spare_normal: Option<f64>,
}

impl Rng {
    /// A generator whose stream is a function of every element of `key`.
    pub fn from_key(key: &[u64]) -> Self {
        let mut h: u64 = 0x243f_6a88_85a3_08d3;
        for &k in key {
            let mut x = h ^ k;
            h = splitmix64(&mut x);
        }
        let mut seed = [0u8; 32];
        let mut x = h;
        for chunk in seed.chunks_exact_mut(8) {
            chunk.copy_from_slice(&splitmix64(&mut x).to_le_bytes());
        }
        Rng { inner: ChaCha12Rng::from_seed(seed), spare_normal: None }
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.inner.next_u64();
            if v < zone {
                return (v % n) as usize;
            }
        }
    }

    /// Standard normal, by the Box–Muller transform (libm: bit-identical on every host).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        // u1 in (0, 1] so that ln(u1) is finite.
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let (s, c) = libm::sincos(2.0 * std::f64::consts::PI * u2);
        self.spare_normal = Some(r * s);
        r * c
    }

    /// Exponential with rate 1 (libm: bit-identical on every host).
    pub fn exp1(&mut self) -> f64 {
        -libm::log(1.0 - self.uniform())
    }

    /// `k` distinct indices from `0..n`, in increasing order (Floyd's algorithm). Whether a
    /// draw was chosen before is a scan of the few chosen so far, or for larger `k` a set: the
    /// same draws either way (an LT code's rows of the robust soliton's spike degree, hundreds
    /// of indices, made the scan most of an HCMM simulation's setup).
    pub fn choose(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n);
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        let mut set = (k > 64).then(|| std::collections::HashSet::with_capacity(k));
        for j in (n - k)..n {
            let t = self.below(j + 1);
            let taken = match set.as_mut() {
                // j is new either way (every earlier draw is below it)
                Some(set) => !set.insert(t) && set.insert(j),
                None => chosen.contains(&t),
            };
            let c = if taken { j } else { t };
            chosen.push(c);
        }
        chosen.sort_unstable();
        chosen
    }

    /// A uniformly random permutation of `0..n` (Fisher–Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            v.swap(i, self.below(i + 1));
        }
        v
    }
}

impl RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.inner.fill_bytes(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden values: the streams every seeded result depends on (data, codes, stragglers).
    #[test]
    fn golden_values_pin_the_generator() {
        let mut r = Rng::from_key(&[1, 2, 3]);
        let u: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(u, GOLDEN_U64, "the key → stream mapping changed");
        let mut r = Rng::from_key(&[7]);
        let n: Vec<f64> = (0..3).map(|_| r.normal()).collect();
        let e = r.exp1();
        assert_eq!(n, GOLDEN_NORMAL, "the normal transform changed");
        assert_eq!(e, GOLDEN_EXP, "the exponential transform changed");
    }
    const GOLDEN_U64: [u64; 3] = [6197965137593813756, 12449871549570023827, 10163013856935390395];
    const GOLDEN_NORMAL: [f64; 3] = [-2.1418198235321317, 0.4732684124885835, 1.0066050681598802];
    const GOLDEN_EXP: f64 = 0.5880409863283171;

    #[test]
    fn same_key_same_stream_different_key_different_stream() {
        let mut a = Rng::from_key(&[1, 2, 3]);
        let mut b = Rng::from_key(&[1, 2, 3]);
        let mut c = Rng::from_key(&[1, 2, 4]);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn normal_and_exponential_moments() {
        let mut r = Rng::from_key(&[7]);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.01, "var {var}");
        let es: Vec<f64> = (0..n).map(|_| r.exp1()).collect();
        let emean = es.iter().sum::<f64>() / n as f64;
        assert!((emean - 1.0).abs() < 0.01, "exp mean {emean}");
        assert!(es.iter().all(|&e| e >= 0.0 && e.is_finite()));
    }

    #[test]
    fn choose_gives_distinct_sorted_indices_covering_all() {
        let mut r = Rng::from_key(&[9]);
        let mut seen = [0usize; 10];
        for _ in 0..2000 {
            let c = r.choose(10, 3);
            assert_eq!(c.len(), 3);
            assert!(c.windows(2).all(|w| w[0] < w[1]));
            for &i in &c {
                seen[i] += 1;
            }
        }
        // each index chosen with probability 3/10: about 600 times
        assert!(seen.iter().all(|&k| (450..750).contains(&k)), "{seen:?}");
        let mut p = r.permutation(10);
        p.sort_unstable();
        assert_eq!(p, (0..10).collect::<Vec<_>>());
    }

    /// The set used for many indices gives the draws of the plain scan (Floyd's algorithm as
    /// written before it): the codes built from them stay bit-identical.
    #[test]
    fn choose_with_a_set_gives_the_scans_draws() {
        let scan = |r: &mut Rng, n: usize, k: usize| {
            let mut chosen: Vec<usize> = Vec::new();
            for j in (n - k)..n {
                let t = r.below(j + 1);
                chosen.push(if chosen.contains(&t) { j } else { t });
            }
            chosen.sort_unstable();
            chosen
        };
        for (n, k) in [(20_000, 386), (100, 100), (1000, 65), (1000, 900)] {
            let (mut a, mut b) = (Rng::from_key(&[3, n as u64]), Rng::from_key(&[3, n as u64]));
            let c = a.choose(n, k);
            assert_eq!(c, scan(&mut b, n, k), "n = {n}, k = {k}");
            assert!(c.windows(2).all(|w| w[0] < w[1]) && c.len() == k);
        }
    }

    #[test]
    fn below_is_in_range_and_uniform() {
        let mut r = Rng::from_key(&[11]);
        let mut counts = [0usize; 7];
        for _ in 0..70_000 {
            counts[r.below(7)] += 1;
        }
        assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
    }

    #[test]
    fn rand_distr_can_sample_from_it() {
        use rand::Rng as _;
        let mut r = Rng::from_key(&[3]);
        let x: f64 = r.sample(rand_distr::StandardNormal);
        assert!(x.is_finite());
    }
}
