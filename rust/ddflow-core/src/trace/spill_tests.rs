//! Tests of spilling: a spilled batch reads exactly as the original (every accessor and a
//! cursor walk, random batches in every compact form), spilling a spine at random points
//! never changes what it holds, and a damaged spill file is an error naming it.

use super::*;
use crate::lattice::{Antichain, Time};
use crate::trace::{Cursor, Description, Spine};
use crate::updates::Updates;
use proptest::prelude::*;
use std::sync::Arc;

/// A directory for the tests' spill files (each is unlinked once mapped; the files the
/// damage tests write carry the process id and are removed by them).
pub(super) fn dir() -> PathBuf {
    let d = std::env::temp_dir().join("ddflow-spill-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Updates whose batch takes a chosen compact form: `wide` words past `u32`; `times` 0:
/// one time, 1: a few (indexed), 2: many (8-byte), 3: many wide (32-byte); `diffs` 0: all
/// one, 1: mostly one (sparse), 2: any (dense).
fn updates(
    key_width: usize,
    val_width: usize,
    wide: bool,
    times: u8,
    diffs: u8,
    raw: &[(u64, u64, u64, i64)],
) -> Updates {
    let mut u = Updates::new(key_width + val_width);
    let high = if wide { 1u64 << 40 } else { 0 };
    for (i, &(k, v, t, d)) in raw.iter().enumerate() {
        let mut row = vec![k | high; key_width];
        row.extend(std::iter::repeat_n(v, val_width));
        let time = match times {
            0 => Time::scalar(3),
            1 => Time::scalar(t % 5),
            2 => Time::from_coords(&[t, t % 3]),
            _ => Time::scalar(t | (1 << 35)),
        };
        let diff = match diffs {
            0 => 1,
            1 if i % 9 == 0 => d,
            1 => 1,
            _ => d,
        };
        u.push(&row, time, diff);
    }
    u
}

fn batch_strategy() -> impl Strategy<Value = Batch> {
    (
        1usize..3,
        0usize..3,
        any::<bool>(),
        0u8..4,
        0u8..3,
        proptest::collection::vec((0u64..20, 0u64..6, 0u64..40, -3i64..4), 0..200),
    )
        .prop_map(|(kw, vw, wide, times, diffs, raw)| {
            let u = updates(kw, vw, wide, times, diffs, &raw);
            Batch::from_updates(u, kw, Description::least_time()).unwrap()
        })
}

/// Two random batches of the same widths, at times that differ, in any compact forms.
pub(super) fn batch_pair_strategy() -> impl Strategy<Value = (Batch, Batch)> {
    let raw = || proptest::collection::vec((0u64..20, 0u64..6, 0u64..40, -3i64..4), 0..200);
    (
        1usize..3,
        0usize..3,
        any::<bool>(),
        0u8..4,
        0u8..3,
        raw(),
        0u8..4,
        0u8..3,
        raw(),
    )
        .prop_map(|(kw, vw, wide, ta, da, ra, tb, db, rb)| {
            let a = updates(kw, vw, wide, ta, da, &ra);
            let b = updates(kw, vw, !wide, tb, db, &rb);
            (
                Batch::from_updates(a, kw, Description::least_time()).unwrap(),
                Batch::from_updates(b, kw, Description::least_time()).unwrap(),
            )
        })
}

/// Checks that `s` reads exactly as `b` through every accessor and a cursor walk.
pub(super) fn same_reads(b: &Batch, s: &Batch) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(b, s);
    prop_assert_eq!(b.len(), s.len());
    prop_assert_eq!(b.n_keys(), s.n_keys());
    prop_assert_eq!(b.n_vals(), s.n_vals());
    prop_assert_eq!(b.keys_narrow(), s.keys_narrow());
    prop_assert_eq!(b.vals_narrow(), s.vals_narrow());
    prop_assert_eq!(b.single_time(), s.single_time());
    prop_assert_eq!(b.description(), s.description());
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for k in 0..b.n_keys() {
        prop_assert_eq!(b.key(k, &mut x), s.key(k, &mut y));
        prop_assert_eq!(b.vals_of(k), s.vals_of(k));
        prop_assert_eq!(b.updates_of_key(k), s.updates_of_key(k));
        let key = b.key(k, &mut x).to_vec();
        prop_assert_eq!(b.seek_key_from(0, &key), s.seek_key_from(0, &key));
        for v in b.vals_of(k) {
            prop_assert_eq!(b.val(v, &mut x), s.val(v, &mut y));
            prop_assert_eq!(b.updates_of(v), s.updates_of(v));
            let (mut p, mut q) = (Vec::new(), Vec::new());
            b.for_each_update(b.updates_of(v), |t, d| p.push((t, d)));
            s.for_each_update(s.updates_of(v), |t, d| q.push((t, d)));
            prop_assert_eq!(p, q);
        }
    }
    for u in 0..b.len() {
        prop_assert_eq!(b.time(u), s.time(u));
        prop_assert_eq!(b.diff(u), s.diff(u));
    }
    prop_assert_eq!(b.to_updates(), s.to_updates());
    let (kw, vw) = (b.key_width(), b.val_width());
    let mut cb = Cursor::new(kw, vw, vec![Arc::new(b.clone())]);
    let mut cs = Cursor::new(kw, vw, vec![Arc::new(s.clone())]);
    prop_assert_eq!(cb.to_updates(), cs.to_updates());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_spilled_batch_reads_as_the_original(b in batch_strategy()) {
        let s = b.spill(&dir()).unwrap();
        prop_assert!(s.is_spilled());
        prop_assert!(!b.is_spilled());
        prop_assert!(s.heap_bytes() <= b.heap_bytes());
        same_reads(&b, &s)?;
        // A spilled batch spills again (copying from its map) to an equal batch.
        let again = s.spill(&dir()).unwrap();
        same_reads(&b, &again)?;
    }

    #[test]
    fn spilling_a_spine_never_changes_its_updates(
        steps in proptest::collection::vec(
            (proptest::collection::vec((0u64..8, 0u64..4, -2i64..3), 0..60), 0u8..4, 0usize..4096),
            1..12,
        ),
    ) {
        let (mut plain, mut spilled) = (Spine::new(1, 1), Spine::new(1, 1));
        for (r, (raw, op, want)) in steps.into_iter().enumerate() {
            let r = r as u64;
            let mut u = Updates::new(2);
            for (k, v, d) in raw {
                u.push(&[k, v], Time::scalar(r), d);
            }
            let b = Arc::new(Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap());
            plain.insert(b.clone());
            spilled.insert(b);
            if op == 1 {
                let f = Antichain::from_elem(Time::scalar(r.saturating_sub(1)));
                plain.set_logical_compaction(&f).unwrap();
                spilled.set_logical_compaction(&f).unwrap();
            }
            if op == 2 {
                plain.exert(want);
                spilled.exert(want);
            }
            spilled.spill(&dir(), want, 0).unwrap();
            prop_assert_eq!(plain.to_updates(), spilled.to_updates());
            prop_assert_eq!(plain.len(), spilled.len());
        }
        while plain.exert(1000) {}
        while spilled.exert(1000) {}
        prop_assert_eq!(plain.to_updates(), spilled.to_updates());
    }
}

#[test]
fn spilling_frees_the_spine_heap() {
    let mut s = Spine::new(1, 1);
    let src: Vec<u64> = (0..10_000).map(|i| i % 97).collect();
    let dst: Vec<u64> = (0..10_000).collect();
    s.insert(Arc::new(Batch::from_static_pairs(&src, &dst).unwrap()));
    let before = s.heap_bytes();
    let (updates, _) = s.to_updates();
    let freed = s.spill(&dir(), usize::MAX, 0).unwrap();
    assert!(freed > 0 && freed <= before, "freed {freed} of {before}");
    assert!(
        s.heap_bytes() < before / 10,
        "{} of {before}",
        s.heap_bytes()
    );
    assert!(s.spilled_bytes() > 0);
    assert_eq!(s.to_updates().0, updates);
    // Nothing left to spill.
    assert_eq!(s.spill(&dir(), usize::MAX, 0).unwrap(), 0);
}

/// Writes the sections of a small batch to a file in the test directory; returns the path
/// and the section lengths.
fn written(name: &str) -> (PathBuf, Vec<usize>) {
    let src: Vec<u64> = (0..1000).map(|i| i % 31).collect();
    let dst: Vec<u64> = (0..1000).map(|i| i * 7).collect();
    let b = Batch::from_static_pairs(&src, &dst).unwrap();
    let layers = b.layers();
    let lens: Vec<usize> = layers.iter().map(|l| l.len()).collect();
    let path = dir().join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    write_sections(&path, &layers).unwrap();
    (path, lens)
}

fn map_error(path: &Path, lens: &[usize]) -> String {
    let err = Sections::map(path, lens)
        .err()
        .expect("a damaged file must not map");
    std::fs::remove_file(path).unwrap();
    assert!(matches!(err, Error::Spill(_)), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    msg
}

#[test]
fn an_intact_file_maps() {
    let (path, lens) = written("intact.bin");
    assert!(Sections::map(&path, &lens).is_ok());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_flipped_byte_is_a_checksum_error() {
    let (path, lens) = written("flipped.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let msg = map_error(&path, &lens);
    assert!(msg.contains("checksum mismatch"), "{msg}");
}

#[test]
fn a_truncated_file_is_an_error() {
    let (path, lens) = written("truncated.bin");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 8]).unwrap();
    let msg = map_error(&path, &lens);
    assert!(msg.contains("truncated"), "{msg}");
    let (path, lens) = written("truncated_header.bin");
    std::fs::write(&path, &bytes[..10]).unwrap();
    let msg = map_error(&path, &lens);
    assert!(msg.contains("shorter than its header"), "{msg}");
}

#[test]
fn a_foreign_file_is_an_error() {
    let (path, lens) = written("foreign.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..8].copy_from_slice(b"PAR1PAR1");
    std::fs::write(&path, &bytes).unwrap();
    let msg = map_error(&path, &lens);
    assert!(msg.contains("bad magic"), "{msg}");
    let (path, mut lens) = written("lengths.bin");
    lens[0] += 4;
    let msg = map_error(&path, &lens);
    assert!(msg.contains("section 0 has"), "{msg}");
}

#[test]
fn an_unwritable_directory_is_an_error_naming_the_file() {
    let b = Batch::from_static_pairs(&[1, 2], &[3, 4]).unwrap();
    let missing = dir().join("no-such-directory");
    let err = b.spill(&missing).unwrap_err();
    assert!(matches!(err, Error::Spill(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("no-such-directory") && msg.contains("cannot write"),
        "{msg}"
    );
}
