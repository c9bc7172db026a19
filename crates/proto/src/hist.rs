//! A mergeable log-scale histogram of durations (model send→receive latencies): 50 bins per
//! decade from 100 ns (relative resolution 4.7%), merged up the tree in goodbye messages.

/// Bins per decade.
const PER_DECADE: f64 = 50.0;
/// Lower edge of bin 0, seconds.
const FLOOR: f64 = 1e-7;
/// Number of bins (100 ns .. 1e6 s).
const BINS: usize = 650;

/// Counts of durations by log-scale bin.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    counts: Vec<u32>,
    max: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; BINS], max: 0.0 }
    }
}

impl Histogram {
    fn bin(v: f64) -> usize {
        if v.is_nan() || v <= FLOOR {
            return 0;
        }
        ((v / FLOOR).log10() * PER_DECADE).floor().min((BINS - 1) as f64) as usize
    }

    /// Upper edge of bin `b`.
    fn upper(b: usize) -> f64 {
        FLOOR * 10f64.powf((b + 1) as f64 / PER_DECADE)
    }

    /// Count one duration (seconds; negative clock skew counts as 0).
    pub fn record(&mut self, v: f64) {
        self.counts[Self::bin(v)] += 1;
        self.max = self.max.max(v);
    }

    /// Number of durations.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|&c| c as u64).sum()
    }

    /// Largest duration recorded (exact when recorded here; a bin edge after a merge).
    pub fn max(&self) -> f64 {
        self.max
    }

    /// The `q`-quantile, as the upper edge of its bin (within 4.7% above the true value).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return Some(Self::upper(b).min(self.max.max(FLOOR)));
            }
        }
        Some(self.max)
    }

    /// Add another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        self.counts.iter_mut().zip(&other.counts).for_each(|(a, b)| *a += b);
        self.max = self.max.max(other.max);
    }

    /// Non-zero bins, for the wire.
    pub fn sparse(&self) -> Vec<(u16, u32)> {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(b, &c)| (b as u16, c)).collect()
    }

    /// From the wire.
    pub fn from_sparse(bins: &[(u16, u32)]) -> Self {
        let mut h = Histogram::default();
        for &(b, c) in bins {
            if (b as usize) < BINS {
                h.counts[b as usize] += c;
                h.max = h.max.max(Self::upper(b as usize));
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_one_bin() {
        let mut h = Histogram::default();
        for i in 1..=1000 {
            h.record(i as f64 * 1e-6); // 1 µs .. 1 ms
        }
        let p95 = h.quantile(0.95).unwrap();
        assert!((950e-6..=950e-6 * 1.05).contains(&p95), "{p95}");
        assert_eq!(h.max(), 1e-3);
        let back = Histogram::from_sparse(&h.sparse());
        assert_eq!(back.count(), 1000);
        let mut m = Histogram::default();
        m.merge(&back);
        m.merge(&back);
        assert_eq!(m.count(), 2000);
        assert!((m.quantile(0.5).unwrap() - h.quantile(0.5).unwrap()).abs() < 1e-12);
        assert_eq!(Histogram::default().quantile(0.5), None);
        h.record(-1.0);
        h.record(f64::NAN);
        assert_eq!(h.count(), 1002);
    }
}
