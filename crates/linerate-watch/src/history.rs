//! Bounded rings: each port's recent rates for the detail pane's chart, and the log of link
//! events. A long watch keeps the same memory as a short one.

use std::collections::VecDeque;

use serde::Serialize;

/// One interval of one port.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatePoint {
    pub t_s: f64,
    pub rx_gbps: f64,
    pub tx_gbps: f64,
}

/// The last `capacity` items, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring<T> {
    items: VecDeque<T>,
    capacity: usize,
    /// How many were pushed in all (the count goes on when the oldest are dropped).
    pushed: u64,
}

impl<T> Ring<T> {
    pub fn new(capacity: usize) -> Self {
        Self {
            items: VecDeque::with_capacity(capacity.min(4096)),
            capacity: capacity.max(1),
            pushed: 0,
        }
    }

    pub fn push(&mut self, item: T) {
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(item);
        self.pushed += 1;
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator {
        self.items.iter()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn last(&self) -> Option<&T> {
        self.items.back()
    }

    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_items_and_counts_them_all() {
        let mut r = Ring::new(3);
        for i in 0..10 {
            r.push(i);
        }
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), [7, 8, 9]);
        assert_eq!((r.len(), r.pushed(), r.last()), (3, 10, Some(&9)));
        let z: Ring<u8> = Ring::new(0);
        assert!(z.is_empty());
    }
}
