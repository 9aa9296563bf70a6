//! Unit tests of batches, builders and cursors.

use super::*;
use crate::lattice::Time;
use crate::updates::Updates;
use crate::Error;
use std::sync::Arc;

fn ups(width: usize, rows: &[(&[u64], u64, i64)]) -> Updates {
    let mut u = Updates::new(width);
    for (r, t, d) in rows {
        u.push(r, Time::scalar(*t), *d);
    }
    u
}

#[test]
fn batch_from_sorted_layers() {
    let u = ups(
        2,
        &[
            (&[1, 10], 0, 1),
            (&[1, 10], 2, -1),
            (&[1, 11], 1, 2),
            (&[3, 5], 0, 1),
            (&[3, 5], 0, -1), // cancels: key 3 disappears
            (&[4, 1 << 40], 0, 1),
        ],
    );
    let b = Batch::from_sorted(&u, 1, Description::scalar(0, 3)).unwrap();
    assert_eq!(b.len(), 4);
    assert_eq!(b.n_keys(), 2);
    assert_eq!(b.n_vals(), 3);
    assert!(b.keys_narrow());
    assert!(!b.vals_narrow());
    let back = b.to_updates();
    assert_eq!(back.len(), 4);
    assert_eq!(back.row(3), &[4, 1 << 40]);
    assert_eq!(back.diffs, vec![1, -1, 2, 1]);
}

#[test]
fn batch_rejects_unsorted() {
    let u = ups(1, &[(&[2], 0, 1), (&[1], 0, 1)]);
    assert!(matches!(
        Batch::from_sorted(&u, 1, Description::empty()),
        Err(Error::Unsorted(_))
    ));
    let u = ups(1, &[(&[1], 3, 1), (&[1], 2, 1)]);
    assert!(matches!(
        Batch::from_sorted(&u, 1, Description::empty()),
        Err(Error::Unsorted(_))
    ));
}

#[test]
fn compact_single_time_batch() {
    let u = ups(2, &[(&[1, 2], 0, 1), (&[1, 3], 0, 1), (&[2, 2], 0, 1)]);
    let b = Batch::from_sorted(&u, 1, Description::least_time()).unwrap();
    assert_eq!(b.single_time(), Some(Time::minimum()));
    // 2 keys (u32) + 3 key offsets + 3 vals (u32), no times, no diffs.
    let expected = 2 * 4 + 3 * 8 + 3 * 4;
    assert!(b.heap_bytes() <= expected + 6 * std::mem::size_of::<Time>());
}

#[test]
fn cursor_merges_batches() {
    let b1 = Batch::from_sorted(
        &ups(2, &[(&[1, 1], 0, 1), (&[3, 1], 0, 1), (&[5, 1], 0, 1)]),
        1,
        Description::scalar(0, 1),
    )
    .unwrap();
    let b2 = Batch::from_sorted(
        &ups(2, &[(&[2, 1], 1, 1), (&[3, 1], 1, -1), (&[3, 2], 1, 1)]),
        1,
        Description::scalar(1, 2),
    )
    .unwrap();
    let mut c = Cursor::new(1, 1, vec![Arc::new(b1), Arc::new(b2)]);
    let mut keys = Vec::new();
    while c.key_valid() {
        keys.push(c.key()[0]);
        c.step_key();
    }
    assert_eq!(keys, vec![1, 2, 3, 5]);
    c.rewind();
    assert!(c.seek_key(&[3]));
    let mut seen = Vec::new();
    c.for_each_val_update(|v, t, d| seen.push((v[0], t.coord(0), d)));
    assert_eq!(seen, vec![(1, 0, 1), (1, 1, -1), (2, 1, 1)]);
    assert!(!c.seek_key(&[4]));
    assert_eq!(c.key(), &[5]);
    let mut h = Updates::new(1);
    assert!(!c.key_history(&[6], &mut h));
    assert!(!c.key_valid());
}
