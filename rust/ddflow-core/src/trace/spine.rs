//! The spine: a trace as a list of batches (provisional: no merging yet).

use super::batch::Batch;
use super::cursor::Cursor;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// A trace: the batches of one arranged collection.
#[derive(Debug)]
pub struct Spine {
    key_width: usize,
    val_width: usize,
    batches: Vec<Arc<Batch>>,
    logical: Antichain<Time>,
    lower: Antichain<Time>,
    upper: Antichain<Time>,
}

impl Spine {
    /// An empty spine for keys of `key_width` and vals of `val_width` words.
    pub fn new(key_width: usize, val_width: usize) -> Spine {
        let m = Antichain::from_elem(Time::minimum());
        Spine {
            key_width,
            val_width,
            batches: Vec::new(),
            logical: m.clone(),
            lower: m.clone(),
            upper: m,
        }
    }

    /// Words per key.
    pub fn key_width(&self) -> usize {
        self.key_width
    }

    /// Words per val.
    pub fn val_width(&self) -> usize {
        self.val_width
    }

    /// Inserts a batch (its `lower` should equal the spine's `upper`).
    pub fn insert(&mut self, batch: Arc<Batch>) {
        assert!(
            batch.key_width() == self.key_width && batch.val_width() == self.val_width,
            "spine of widths ({}, {}) given a batch of widths ({}, {})",
            self.key_width,
            self.val_width,
            batch.key_width(),
            batch.val_width()
        );
        self.upper = batch.upper().clone();
        if !batch.is_empty() {
            self.batches.push(batch);
        }
    }

    /// Sets the logical compaction frontier.
    pub fn set_logical_compaction(&mut self, frontier: &Antichain<Time>) -> Result<()> {
        if !self.logical.dominates(frontier) {
            return Err(Error::Time(format!(
                "compaction frontier {frontier:?} is not in the future of {:?}",
                self.logical
            )));
        }
        self.logical = frontier.clone();
        Ok(())
    }

    /// The logical compaction frontier.
    pub fn logical_compaction(&self) -> &Antichain<Time> {
        &self.logical
    }

    /// Lower frontier of the spine.
    pub fn lower(&self) -> &Antichain<Time> {
        &self.lower
    }

    /// Upper frontier: the upper of the last inserted batch.
    pub fn upper(&self) -> &Antichain<Time> {
        &self.upper
    }

    /// Stored updates.
    pub fn len(&self) -> usize {
        self.batches.iter().map(|b| b.len()).sum()
    }

    /// Whether no updates are stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes of the stored batches.
    pub fn heap_bytes(&self) -> usize {
        self.batches.iter().map(|b| b.heap_bytes()).sum()
    }

    /// Does up to `fuel` units of idle merge work; returns whether work remains.
    pub fn exert(&mut self, _fuel: usize) -> bool {
        false
    }

    /// The readable batches, oldest first.
    pub fn batches(&self) -> Vec<Arc<Batch>> {
        self.batches.clone()
    }

    /// A cursor over the current batches.
    pub fn cursor(&self) -> Cursor {
        Cursor::new(self.key_width, self.val_width, self.batches())
    }

    /// The whole trace as consolidated updates (rows `key ++ val`, sorted), and the key width.
    pub fn to_updates(&self) -> (Updates, usize) {
        (self.cursor().to_updates(), self.key_width)
    }
}
