//! Combinations and survivor sets.

/// A set of children (0-based indices `< n`) stored as a bitmask; the key of the decoder cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SurvivorSet {
    n: usize,
    bits: Vec<u64>,
}

impl SurvivorSet {
    /// The empty set over `n` children.
    pub fn empty(n: usize) -> Self {
        SurvivorSet { n, bits: vec![0; n.div_ceil(64).max(1)] }
    }

    /// The set of the given indices (each `< n`).
    pub fn from_indices(n: usize, idx: &[usize]) -> Self {
        let mut s = Self::empty(n);
        for &i in idx {
            s.insert(i);
        }
        s
    }

    /// Add child `i`.
    pub fn insert(&mut self, i: usize) {
        assert!(i < self.n, "survivor {i} out of range 0..{}", self.n);
        self.bits[i / 64] |= 1 << (i % 64);
    }

    /// Whether child `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        i < self.n && self.bits[i / 64] & (1 << (i % 64)) != 0
    }

    /// Size of the universe (number of children).
    pub fn universe(&self) -> usize {
        self.n
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.bits.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Members in increasing order.
    pub fn indices(&self) -> Vec<usize> {
        (0..self.n).filter(|&i| self.contains(i)).collect()
    }
}

/// Number of combinations C(n, k), saturating at `u64::MAX`.
pub fn binomial(n: usize, k: usize) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        acc = acc * (n - i) as u128 / (i + 1) as u128;
        if acc > u64::MAX as u128 {
            return u64::MAX;
        }
    }
    acc as u64
}

/// All k-subsets of `0..n` in lexicographic order.
pub fn combinations(n: usize, k: usize) -> Combinations {
    Combinations { n, idx: (0..k).collect(), done: k > n }
}

/// Iterator returned by [`combinations`].
pub struct Combinations {
    n: usize,
    idx: Vec<usize>,
    done: bool,
}

impl Iterator for Combinations {
    type Item = Vec<usize>;
    fn next(&mut self) -> Option<Vec<usize>> {
        if self.done {
            return None;
        }
        let out = self.idx.clone();
        let k = self.idx.len();
        // advance
        let mut i = k;
        loop {
            if i == 0 {
                self.done = true;
                break;
            }
            i -= 1;
            if self.idx[i] < self.n - k + i {
                self.idx[i] += 1;
                for j in (i + 1)..k {
                    self.idx[j] = self.idx[j - 1] + 1;
                }
                break;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_count_matches_binomial() {
        for n in 0..9 {
            for k in 0..=n {
                let all: Vec<_> = combinations(n, k).collect();
                assert_eq!(all.len() as u64, binomial(n, k), "n={n} k={k}");
                assert!(all.iter().all(|c| c.windows(2).all(|w| w[0] < w[1])));
            }
        }
        assert_eq!(binomial(12, 5), 792);
        assert_eq!(binomial(156, 39), u64::MAX);
    }

    #[test]
    fn survivor_set_roundtrip() {
        let s = SurvivorSet::from_indices(130, &[0, 5, 64, 129]);
        assert_eq!(s.indices(), vec![0, 5, 64, 129]);
        assert_eq!(s.len(), 4);
        assert!(s.contains(64) && !s.contains(63));
        assert_eq!(s, SurvivorSet::from_indices(130, &[129, 64, 5, 0]));
    }
}
