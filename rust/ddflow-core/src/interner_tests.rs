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

/// Interns `s` into a store of the test's own (the write path of [`Interner::intern_with`]).
fn local_intern(store: &mut Store, s: &str) -> u32 {
    store.reserve(1);
    store.find_or_insert(hash(s), s)
}

/// Looks `s` up without touching it.
fn peek(store: &Store, s: &str) -> Option<u32> {
    store.table.find(hash(s), |id| store.text(id) == s).ok()
}

/// Looks `s` up in a local store without adding it (touching it, as the read path does).
fn local_find(store: &Store, s: &str) -> Option<u32> {
    store.find(hash(s), s)
}

#[test]
fn a_sweep_frees_only_unmarked_untouched_strings_and_reuses_their_ids() {
    let mut store = Store::default();
    let a = local_intern(&mut store, "a");
    let b = local_intern(&mut store, "b");
    let c = local_intern(&mut store, "c");
    // Everything was touched since the last sweep: nothing is freed yet.
    assert_eq!(store.sweep(|id| id == a).freed, 0);
    // Now only the marked id survives, and "c" was looked up again in between.
    assert_eq!(local_find(&store, "c"), Some(c));
    let stats = store.sweep(|id| id == a);
    assert_eq!((stats.freed, stats.live), (1, 2));
    assert_eq!(store.get(b as u64), None);
    assert_eq!(store.get(a as u64), Some("a"));
    assert_eq!(local_find(&store, "b"), None);
    // The freed id is the next one handed out.
    let d = local_intern(&mut store, "d");
    assert_eq!(d, b);
    assert_eq!(store.get(d as u64), Some("d"));
    assert_eq!(local_find(&store, "a"), Some(a));
}

#[test]
fn permanent_strings_survive_every_sweep() {
    let mut store = Store::default();
    let k = local_intern(&mut store, "constant");
    store.make_permanent(k);
    for _ in 0..3 {
        store.sweep(|_| false);
    }
    assert_eq!(store.get(k as u64), Some("constant"));
    assert_eq!(local_find(&store, "constant"), Some(k));
}

#[test]
fn the_arena_is_rewritten_when_mostly_free() {
    let mut store = Store::default();
    let ids: Vec<u32> = (0..200_000)
        .map(|i| local_intern(&mut store, &format!("string number {i:08}")))
        .collect();
    let keep: std::collections::HashSet<u32> = ids.iter().copied().step_by(100).collect();
    store.sweep(|_| true);
    let before = store.size().2;
    let stats = store.sweep(|id| keep.contains(&id));
    assert_eq!(stats.live, keep.len());
    assert!(
        stats.arena_bytes * 4 < before,
        "{} of {before}",
        stats.arena_bytes
    );
    for (i, &id) in ids.iter().enumerate() {
        let want = format!("string number {i:08}");
        if keep.contains(&id) {
            assert_eq!(store.get(id as u64), Some(want.as_str()));
            assert_eq!(peek(&store, &want), Some(id));
        } else {
            assert_eq!(store.get(id as u64), None);
        }
    }
}

#[test]
fn a_churning_arena_holds_at_most_twice_its_live_text_plus_a_chunk() {
    // New strings keep coming and the previous round's are freed (a sliding pool of user
    // ids): the text written into the arena, which is resident, stays within its bound
    // after every collection, and every string in use still resolves.
    let mut store = Store::default();
    let mut most_written = 0;
    for round in 0..60usize {
        let ids: Vec<u32> = (0..2_000)
            .map(|i| local_intern(&mut store, &format!("user {round:03} {i:05}")))
            .collect();
        let held: std::collections::HashSet<u32> = ids.iter().copied().collect();
        let stats = store.sweep(|id| held.contains(&id));
        assert_eq!(stats.live, ids.len(), "round {round}");
        let written: usize = store.chunks.iter().map(String::len).sum();
        assert!(
            written <= 2 * stats.live_bytes + FIRST_CHUNK,
            "round {round}: {written} bytes written for {} live",
            stats.live_bytes
        );
        most_written = most_written.max(written);
        for (i, &id) in ids.iter().enumerate() {
            let want = format!("user {round:03} {i:05}");
            assert_eq!(store.get(id as u64), Some(want.as_str()));
        }
    }
    // 60 rounds wrote 1.7 MB of text; never more than a round's twice plus a chunk held.
    assert!(
        most_written < 2 * 2_000 * 14 + FIRST_CHUNK,
        "{most_written}"
    );
}

/// One step of the collection model.
#[derive(Clone, Debug)]
enum Step {
    /// Intern a string (from a small alphabet of texts, some long) and hold its id.
    Hold(u16),
    /// Intern a string and drop the id at once (in flight only).
    Touch(u16),
    /// Drop the `n`-th held id (modulo the number held).
    Drop(usize),
    /// Collect with the held ids as the marks.
    Collect,
}

fn text_of(k: u16) -> String {
    if k.is_multiple_of(17) {
        format!("long-{k}-{}", "x".repeat(3000 + k as usize))
    } else {
        format!("s{k}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Against a model: a held id keeps its string and its id through any number of
    /// sweeps; a string neither held nor touched for a whole interval is freed; a freed id
    /// comes back only for a string interned later, never while an older holder has it;
    /// re-interning a freed string works (with whatever id).
    #[test]
    fn collection_matches_a_model(
        steps in proptest::collection::vec(
            prop_oneof![
                4 => (0u16..200).prop_map(Step::Hold),
                2 => (0u16..200).prop_map(Step::Touch),
                3 => (0usize..1000).prop_map(Step::Drop),
                1 => Just(Step::Collect),
            ],
            0..400,
        ),
    ) {
        let mut store = Store::default();
        // Held (id, text) pairs; the same text may be held several times.
        let mut held: Vec<(u32, String)> = Vec::new();
        // Texts interned (held or touched) since the last sweep.
        let mut touched: std::collections::HashSet<String> = Default::default();
        // Texts freed by the last sweep.
        let mut freed_last: Vec<String> = Vec::new();
        for step in steps {
            match step {
                Step::Hold(k) | Step::Touch(k) => {
                    let text = text_of(k);
                    let id = local_intern(&mut store, &text);
                    // Equal texts share one id while held.
                    for (hid, ht) in &held {
                        prop_assert_eq!(*hid == id, *ht == text, "{} {}", hid, id);
                    }
                    touched.insert(text.clone());
                    if matches!(step, Step::Hold(_)) {
                        held.push((id, text));
                    }
                }
                Step::Drop(n) => {
                    if !held.is_empty() {
                        let n = n % held.len();
                        held.swap_remove(n);
                    }
                }
                Step::Collect => {
                    let marked: std::collections::HashSet<u32> =
                        held.iter().map(|(id, _)| *id).collect();
                    let live_before: Vec<(u32, String)> = (0..store.id_bound() as u32)
                        .filter_map(|id| store.get(id as u64).map(|t| (id, t.to_string())))
                        .collect();
                    store.sweep(|id| marked.contains(&id));
                    freed_last.clear();
                    for (id, text) in live_before {
                        let keep = marked.contains(&id) || touched.contains(&text);
                        if keep {
                            prop_assert_eq!(store.get(id as u64), Some(text.as_str()));
                            prop_assert_eq!(peek(&store, &text), Some(id));
                        } else {
                            prop_assert_eq!(peek(&store, &text), None);
                            prop_assert_eq!(store.get(id as u64), None);
                            freed_last.push(text);
                        }
                    }
                    touched.clear();
                }
            }
            for (id, text) in &held {
                prop_assert_eq!(store.get(*id as u64), Some(text.as_str()));
            }
        }
        // A freed string interns again.
        for text in freed_last {
            let id = local_intern(&mut store, &text);
            prop_assert_eq!(store.get(id as u64), Some(text.as_str()));
        }
    }
}

#[test]
fn id_table_removals_keep_every_other_id_findable() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for round in 0..20 {
        // Hashes bunched at the ends (runs that wrap around) and in the middle.
        let n = 500 + round * 300;
        let hashes: Vec<u32> = (0..n)
            .map(|i| match i % 4 {
                0 => u32::MAX - rng.gen_range(0..200),
                1 => rng.gen_range(0..200),
                _ => rng.gen(),
            })
            .collect();
        let mut table = IdTable::default();
        table.reserve(n);
        for (id, &h) in hashes.iter().enumerate() {
            let at = table.find(h, |other| other as usize == id).unwrap_err();
            table.put(at, h, id as u32);
        }
        let gone: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.4)).collect();
        table.remove_where(|id| gone[id as usize]);
        assert_eq!(table.len, gone.iter().filter(|&&g| !g).count());
        for (id, &h) in hashes.iter().enumerate() {
            let found = table.find(h, |other| other as usize == id).ok();
            assert_eq!(found.is_some(), !gone[id], "round {round}, id {id}");
        }
    }
}
