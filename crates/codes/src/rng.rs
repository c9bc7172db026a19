//! Deterministic random numbers: xoshiro256++ seeded through SplitMix64 from a key.
//!
//! A stream is identified by a key such as `(seed, DOMAIN_FEATURES, row)`. Two processes that ask
//! for the same key get the same numbers, bit for bit, on any host running the same binary: the
//! transcendental functions come from the pure-Rust `libm` crate compiled into the binary rather
//! than from the host's C library.

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
    /// Screening of decoders on sampled survivor sets.
    pub const SCREEN: u64 = 0x7363_7265_656e_0001;
}

/// One step of SplitMix64; used to expand keys into generator states.
#[inline]
pub fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256++ generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
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
        let mut x = h;
        let s = [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)];
        Rng { s, spare_normal: None }
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = (self.s[0].wrapping_add(self.s[3])).rotate_left(23).wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.next_u64();
            if v < zone {
                return (v % n) as usize;
            }
        }
    }

    /// Standard normal, by the Box–Muller transform.
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

    /// Exponential with rate 1.
    pub fn exp1(&mut self) -> f64 {
        -libm::log(1.0 - self.uniform())
    }

    /// `k` distinct indices from `0..n`, in increasing order (Floyd's algorithm).
    pub fn choose(&mut self, n: usize, k: usize) -> Vec<usize> {
        assert!(k <= n);
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        for j in (n - k)..n {
            let t = self.below(j + 1);
            if chosen.contains(&t) {
                chosen.push(j);
            } else {
                chosen.push(t);
            }
        }
        chosen.sort_unstable();
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
