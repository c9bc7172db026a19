//! Rank arithmetic of an (n, L)-regular tree in BFS (heap) order.
//!
//! The master is rank 0; the children of rank r are `n·r + 1 ..= n·r + n`; the parent of r is
//! `⌊(r − 1)/n⌋`; a node's sibling index `(r − 1) mod n` is the row of `B` it uses in its
//! parent's allocation. A star of N workers is the (N, 1) tree. (Notes §1.2; the thesis's node
//! (l, i), 1-based, is rank `(n^l − n)/(n − 1) + i`.)

/// Shape of an (n, L)-regular tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tree {
    /// Children per non-leaf node.
    pub n: usize,
    /// Layers of workers below the master.
    pub layers: usize,
}

impl Tree {
    /// The (n, L) tree.
    pub fn new(n: usize, layers: usize) -> Self {
        assert!(n >= 1 && layers >= 1);
        Tree { n, layers }
    }

    /// Number of workers N = n + n² + … + n^L.
    pub fn workers(&self) -> usize {
        (1..=self.layers).map(|l| self.n.pow(l as u32)).sum()
    }

    /// Number of ranks, master included.
    pub fn ranks(&self) -> usize {
        self.workers() + 1
    }

    /// Layer of a rank (0 for the master).
    pub fn layer(&self, rank: usize) -> usize {
        let mut first = 1; // first rank of layer l
        let mut width = self.n;
        let mut l = 1;
        if rank == 0 {
            return 0;
        }
        while rank >= first + width {
            first += width;
            width *= self.n;
            l += 1;
        }
        l
    }

    /// Rank of the thesis's node (l, i), 1-based i ∈ [n^l].
    pub fn rank_of(&self, layer: usize, i: usize) -> usize {
        if layer == 0 {
            return 0;
        }
        (1..layer).map(|l| self.n.pow(l as u32)).sum::<usize>() + i
    }

    /// Parent of a rank (None for the master).
    pub fn parent(&self, rank: usize) -> Option<usize> {
        (rank > 0).then(|| (rank - 1) / self.n)
    }

    /// Children of a rank (empty for leaves).
    pub fn children(&self, rank: usize) -> Vec<usize> {
        if self.layer(rank) == self.layers {
            return vec![];
        }
        (self.n * rank + 1..=self.n * rank + self.n).collect()
    }

    /// 0-based index among siblings (the row of B used for this node).
    pub fn sibling_index(&self, rank: usize) -> usize {
        assert!(rank > 0);
        (rank - 1) % self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AT-4 of the notes.
    #[test]
    fn rank_numbering_matches_the_notes() {
        let t = Tree::new(3, 2);
        assert_eq!(t.workers(), 12);
        assert_eq!(t.children(0), vec![1, 2, 3]);
        assert_eq!(t.children(2), vec![7, 8, 9]);
        assert_eq!(t.parent(8), Some(2));
        assert_eq!(t.sibling_index(8), 1);
        assert_eq!(t.rank_of(2, 5), 8);
        assert!(t.children(8).is_empty());
        assert_eq!(t.layer(3), 1);
        assert_eq!(t.layer(4), 2);

        let t = Tree::new(4, 3);
        assert_eq!(t.workers(), 84);
        assert_eq!((21..=84).filter(|&r| t.layer(r) == 3).count(), 64);
        assert_eq!(t.layer(20), 2);
        assert_eq!(t.parent(84), Some(20));
        assert_eq!(t.children(20), vec![81, 82, 83, 84]);

        let t = Tree::new(12, 2);
        assert_eq!(t.workers(), 156);
        assert_eq!(t.children(1), (13..=24).collect::<Vec<_>>());

        let star = Tree::new(9, 1);
        assert_eq!(star.children(0), (1..=9).collect::<Vec<_>>());
        assert!(star.children(5).is_empty());
    }

    #[test]
    fn parent_and_children_are_inverse() {
        for (n, l) in [(2, 4), (3, 3), (5, 2)] {
            let t = Tree::new(n, l);
            for r in 0..t.ranks() {
                for c in t.children(r) {
                    assert_eq!(t.parent(c), Some(r));
                    assert_eq!(t.layer(c), t.layer(r) + 1);
                }
            }
        }
    }
}
