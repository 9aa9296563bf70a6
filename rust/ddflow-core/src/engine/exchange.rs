//! Exchange: routing updates between workers.
//!
//! Each worker owns the keys that hash to it ([`worker_of`]). Updates arriving at an
//! operator that keys its state (`arrange`, [`super::operators::Operator::exchange_key`])
//! are split by the owner of their key; the parts for other workers go to the sending
//! worker's outbox, and the engine moves outboxes into the owners' input queues
//! ([`flush`]) right after each node ran on every worker, so a pass sees every worker's
//! data at the next node.

use super::column::Msg;
use super::worker::Worker;

pub mod split;

/// The worker that owns a key.
#[inline]
pub fn worker_of(key: &[u64], workers: usize) -> usize {
    worker_of_words(key.iter().copied(), workers)
}

/// The worker that owns the key made of the columns `key` of `row` (as [`worker_of`] of
/// those words, without gathering them).
#[inline]
pub fn worker_of_row(row: &[u64], key: &[usize], workers: usize) -> usize {
    worker_of_words(key.iter().map(|&k| row[k]), workers)
}

#[inline]
fn worker_of_words(key: impl Iterator<Item = u64>, workers: usize) -> usize {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for k in key {
        h = (h ^ k).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    (h % workers as u64) as usize
}

/// Splits `msg` by the owner of each update's key (the columns `key` of its rows): one
/// message per worker that receives updates, `(worker, message)`, each keeping the order
/// its updates had in `msg`. The message is taken by value and given back as its parts
/// fill ([`split::split_by`]): split while it lived whole, the 1M/10M BFS's 10M-edge load
/// held two copies of its 240 MB of updates on two workers (`benches/memory_stages.py ...
/// -w 2`). A message for one worker only is passed on uncopied.
pub fn partition(msg: Msg, key: &[usize], peers: usize) -> Vec<(usize, Msg)> {
    let Msg { schema, upd } = msg;
    split::split_by(upd, peers, |row| worker_of_row(row, key, peers))
        .into_iter()
        .enumerate()
        .filter(|(_, upd)| !upd.is_empty())
        .map(|(target, upd)| {
            (
                target,
                Msg {
                    schema: schema.clone(),
                    upd,
                },
            )
        })
        .collect()
}

/// Moves every worker's outbox into the input queues of the receiving workers.
pub fn flush(workers: &mut [Worker]) {
    let mut moving = Vec::new();
    for w in workers.iter_mut() {
        moving.append(&mut w.outbox);
    }
    for (target, node, port, msg) in moving {
        workers[target].inbox[node][port].push(msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::DType;
    use std::sync::Arc;

    use crate::lattice::Time;
    use crate::updates::Updates;
    use proptest::prelude::*;

    #[test]
    fn partition_keeps_every_update_once_with_its_key_owner() {
        let mut upd = Updates::new(2);
        for i in 0..100u64 {
            upd.push(&[i % 7, i], crate::lattice::Time::minimum(), 1);
        }
        let msg = Msg {
            schema: Arc::new(vec![DType::Int64, DType::Int64]),
            upd,
        };
        let parts = partition(msg, &[0], 3);
        assert_eq!(parts.iter().map(|(_, m)| m.upd.len()).sum::<usize>(), 100);
        for (w, m) in &parts {
            // Each part allocated at its size.
            assert_eq!(m.upd.rows.capacity(), m.upd.rows.len());
            assert_eq!(m.upd.diffs.capacity(), m.upd.len());
            for i in 0..m.upd.len() {
                assert_eq!(worker_of(&[m.upd.row(i)[0]], 3), *w);
                assert_eq!(worker_of_row(m.upd.row(i), &[0], 3), *w);
            }
        }
    }

    /// The updates of `upd` as tuples, in order.
    fn tuples(upd: &Updates) -> Vec<(Vec<u64>, Time, i64)> {
        (0..upd.len())
            .map(|i| (upd.row(i).to_vec(), upd.times[i], upd.diffs[i]))
            .collect()
    }

    proptest! {
        #[test]
        fn partition_matches_a_filter_by_owner(
            rows in proptest::collection::vec(proptest::collection::vec(0u64..40, 3), 0..300),
            times in proptest::collection::vec(0u64..3, 300),
            key in proptest::sample::subsequence(vec![0usize, 1, 2], 0..=3),
            peers in 1usize..5,
        ) {
            let mut upd = Updates::new(3);
            for (i, row) in rows.iter().enumerate() {
                upd.push(row, Time::from_coords(&[times[i]]), i as i64 - 7);
            }
            let all = tuples(&upd);
            let msg = Msg { schema: Arc::new(vec![DType::Int64; 3]), upd };
            let parts = partition(msg, &key, peers);
            let owner = |row: &[u64]| {
                let k: Vec<u64> = key.iter().map(|&c| row[c]).collect();
                worker_of(&k, peers)
            };
            for w in 0..peers {
                let expected: Vec<_> =
                    all.iter().filter(|(row, _, _)| owner(row) == w).cloned().collect();
                let got = parts.iter().find(|(t, _)| *t == w).map(|(_, m)| tuples(&m.upd));
                prop_assert_eq!(got.unwrap_or_default(), expected);
            }
            prop_assert!(parts.iter().all(|(_, m)| !m.upd.is_empty()));
        }
    }
}
