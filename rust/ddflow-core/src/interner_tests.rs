//! Tests of the string interner: a model check (a plain `HashMap`) over random batches,
//! long strings that get chunks of their own, concurrent interning, and resolving.

use super::*;
use crate::encoding::NULL_STR;
use proptest::prelude::*;
use std::collections::HashMap;

/// A prefix no other test's strings share (the interner is process-wide).
fn tagged(tag: &str, s: &str) -> String {
    format!("interner-test/{tag}/{s}")
}

fn resolve(ids: &[u64]) -> Vec<String> {
    Interner::resolve_all(ids)
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn same_string_same_id_and_resolve_inverts() {
    let words: Vec<String> = ["a", "b", "", "a", "é", "b", ""]
        .iter()
        .map(|s| tagged("basic", s))
        .collect();
    let mut ids = Vec::new();
    Interner::intern_all(words.iter().map(String::as_str), &mut ids);
    assert_eq!(ids[0], ids[3]);
    assert_eq!(ids[1], ids[6 - 5]);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(resolve(&ids), words);
    assert_eq!(Interner::intern(&words[4]), ids[4]);
    // The empty string itself is a value.
    let e = Interner::intern("");
    assert_eq!(resolve(&[e]), vec![String::new()]);
    assert_ne!(e, NULL_STR);
}

#[test]
fn ids_append_after_existing_output() {
    let mut out = vec![7, 8];
    Interner::intern_all([tagged("append", "x").as_str()], &mut out);
    assert_eq!(&out[..2], &[7, 8]);
    assert_eq!(out.len(), 3);
    assert_eq!(resolve(&out[2..]), vec![tagged("append", "x")]);
}

#[test]
fn unknown_and_null_ids_are_errors_for_resolve_all() {
    assert!(Interner::resolve_all(&[NULL_STR]).is_err());
    assert!(Interner::resolve_all(&[u32::MAX as u64 + 5]).is_err());
    let err = Interner::resolve_all(&[u64::MAX - 1])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown string id"), "{err}");
}

#[test]
fn resolve_each_passes_nulls_and_stops_at_errors() {
    let a = Interner::intern(&tagged("each", "a"));
    let mut seen = Vec::new();
    Interner::resolve_each([a, NULL_STR, a], |s| {
        seen.push(s.map(str::to_string));
        Ok(())
    })
    .unwrap();
    assert_eq!(
        seen,
        vec![Some(tagged("each", "a")), None, Some(tagged("each", "a"))]
    );
    let mut calls = 0;
    let r = Interner::resolve_each([a, a, a], |_| {
        calls += 1;
        if calls == 2 {
            Err(Error::Value("stop".into()))
        } else {
            Ok(())
        }
    });
    assert!(r.is_err());
    assert_eq!(calls, 2);
}

#[test]
fn long_strings_get_their_own_chunks() {
    // Around and above a quarter of the first and the largest chunk sizes.
    let sizes = [
        FIRST_CHUNK / 4 - 1,
        FIRST_CHUNK / 4 + 1,
        FIRST_CHUNK,
        MAX_CHUNK / 4 + 3,
        MAX_CHUNK + 1,
        5,
    ];
    let words: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let body: String = (0..n)
                .map(|j| (b'a' + ((i + j) % 26) as u8) as char)
                .collect();
            tagged("long", &body)
        })
        .collect();
    let mut ids = Vec::new();
    Interner::intern_all(words.iter().map(String::as_str), &mut ids);
    assert_eq!(resolve(&ids), words);
    let mut again = Vec::new();
    Interner::intern_all(words.iter().rev().map(String::as_str), &mut again);
    again.reverse();
    assert_eq!(again, ids);
}

#[test]
fn mostly_new_batches_switch_to_the_write_lock_and_agree() {
    // Old strings mixed into a batch of new ones, past the read-lock cut-off.
    let old: Vec<String> = (0..10).map(|i| tagged("mix-old", &i.to_string())).collect();
    let mut old_ids = Vec::new();
    Interner::intern_all(old.iter().map(String::as_str), &mut old_ids);
    let batch: Vec<String> = (0..5 * READ_MISSES)
        .map(|i| {
            if i % 7 == 0 {
                old[i % 10].clone()
            } else {
                tagged("mix-new", &(i % 100).to_string())
            }
        })
        .collect();
    let mut ids = Vec::new();
    Interner::intern_all(batch.iter().map(String::as_str), &mut ids);
    assert_eq!(resolve(&ids), batch);
    for (i, s) in batch.iter().enumerate() {
        if i % 7 == 0 {
            assert_eq!(ids[i], old_ids[i % 10], "{s}");
        }
    }
}

#[test]
fn threads_interning_the_same_strings_agree() {
    let words: Vec<String> = (0..2000)
        .map(|i| tagged("threads", &(i % 500).to_string()))
        .collect();
    let results: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let words = &words;
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    // Each thread in its own order (a multiplier prime to the length) and
                    // batch sizes.
                    let step = [1, 3, 7, 9][t];
                    let order: Vec<usize> =
                        (0..words.len()).map(|i| (i * step) % words.len()).collect();
                    for chunk in order.chunks(37 + t * 50) {
                        Interner::intern_all(chunk.iter().map(|&i| words[i].as_str()), &mut ids);
                    }
                    let mut by_index = vec![0; words.len()];
                    for (k, &i) in order.iter().enumerate() {
                        by_index[i] = ids[k];
                    }
                    by_index
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &results[1..] {
        assert_eq!(r, &results[0]);
    }
    assert_eq!(resolve(&results[0]), words);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Against a `HashMap` model: ids are equal iff the strings are, each id resolves to its
    /// string, and interning again (in any batching) gives the same ids.
    #[test]
    fn matches_a_hashmap_model(
        words in proptest::collection::vec("[a-c]{0,3}|.{0,12}|[x]{100,3000}", 0..300),
        cuts in proptest::collection::vec(0usize..300, 0..6),
        tag in 0u64..u64::MAX,
    ) {
        let words: Vec<String> = words.iter().map(|w| tagged(&format!("prop{tag}"), w)).collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(words.len())).collect();
        cuts.push(0);
        cuts.push(words.len());
        cuts.sort_unstable();
        let mut ids = Vec::new();
        for w in cuts.windows(2) {
            Interner::intern_all(words[w[0]..w[1]].iter().map(String::as_str), &mut ids);
        }
        prop_assert_eq!(ids.len(), words.len());
        let mut model: HashMap<&str, u64> = HashMap::new();
        let mut by_id: HashMap<u64, &str> = HashMap::new();
        for (w, &id) in words.iter().zip(&ids) {
            prop_assert_ne!(id, NULL_STR);
            prop_assert_eq!(*model.entry(w).or_insert(id), id);
            prop_assert_eq!(*by_id.entry(id).or_insert(w), w.as_str());
        }
        prop_assert_eq!(resolve(&ids), words.clone());
        let mut again = Vec::new();
        Interner::intern_all(words.iter().map(String::as_str), &mut again);
        prop_assert_eq!(again, ids);
    }
}

#[test]
fn id_table_finds_every_id_through_growth_collisions_and_wraparound() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    // Hashes with many repeats (equal hashes of different strings) and the extremes, whose
    // home slots are the table's first and last.
    let hashes: Vec<u32> = (0..20_000)
        .map(|i| match i % 5 {
            0 => u32::MAX,
            1 => 0,
            2 => rng.gen_range(0..64),
            _ => rng.gen(),
        })
        .collect();
    let mut table = IdTable::default();
    for (id, &h) in hashes.iter().enumerate() {
        if id % 1000 == 0 {
            table.reserve(1000);
        }
        let at = table.find(h, |other| other as usize == id).unwrap_err();
        table.put(at, h, id as u32);
        assert!(table.len * 4 <= table.slots.len() * 3);
    }
    for (id, &h) in hashes.iter().enumerate() {
        assert_eq!(table.find(h, |other| other as usize == id), Ok(id as u32));
    }
    assert!(table.find(12345, |_| false).is_err());
}
