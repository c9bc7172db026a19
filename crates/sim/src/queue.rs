//! A time-ordered event queue (ties broken by insertion order, so runs are deterministic).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Item<E> {
    at: f64,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Item<E> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<E> Eq for Item<E> {}
impl<E> PartialOrd for Item<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Item<E> {
    // reversed: BinaryHeap is a max-heap, we pop the earliest
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

/// Events `E` ordered by time.
pub(crate) struct Queue<E> {
    heap: BinaryHeap<Item<E>>,
    seq: u64,
}

impl<E> Queue<E> {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        Queue { heap: BinaryHeap::new(), seq: 0 }
    }

    /// Add `ev` at time `at`.
    pub(crate) fn push(&mut self, at: f64, ev: E) {
        self.seq += 1;
        self.heap.push(Item { at, seq: self.seq, ev });
    }

    /// The earliest event.
    pub(crate) fn pop(&mut self) -> Option<(f64, E)> {
        self.heap.pop().map(|i| (i.at, i.ev))
    }
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = super::Queue::new();
        q.push(2.0, "c");
        q.push(1.0, "a");
        q.push(1.0, "b");
        q.push(0.5, "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["first", "a", "b", "c"]);
    }
}
