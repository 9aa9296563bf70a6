//! Spilling a batch to disk: its layers written to one file, mapped back read-only.
//!
//! [`Batch::spill`] writes the batch's big vectors (keys, vals, offsets, times, diffs) to a
//! new file in a spill directory, maps the file, checks it, unlinks it and returns an equal
//! batch whose vectors are views of the map ([`Stored::Mapped`]). The small parts (the
//! description, widths, which compact form each layer has, a single time, the distinct
//! times of an indexed layer) stay on the heap. Because the file is unlinked as soon as it
//! is mapped, nothing is left on disk once the batch is dropped, or after a crash.
//!
//! The file: a header of 24 bytes (`MAGIC`, the format version `u32`, the number of
//! sections `u32`, the CRC-32 of everything after the header `u32`, 4 zero bytes), the
//! byte length of each section as a `u64`, then the sections, each starting at a multiple
//! of 8 bytes (zero padding). Numbers are in the machine's byte order: a spill file is only
//! ever read by the process that wrote it. Mapping checks the magic, version, section
//! lengths and checksum, and a mismatch is an [`Error::Spill`] naming the file.

use super::batch::{Batch, Diffs, Times, Words};
use super::stored::{Mapping, Pod, Stored};
use super::time_vec::TimeVec;
use crate::error::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// First bytes of a spill file.
const MAGIC: &[u8; 8] = b"DDFSPILL";
/// Format version.
const VERSION: u32 = 1;
/// Bytes before the section lengths.
const HEADER: usize = 24;

/// Spill files created by this process (for unique names).
static SEQ: AtomicU64 = AtomicU64::new(0);
/// Bytes written to spill files by this process.
static WRITTEN: AtomicUsize = AtomicUsize::new(0);

/// Bytes written to spill files by this process so far (batches spilled, and merge outputs
/// written through to files, see [`write_through_dir`]).
pub fn spilled_bytes_total() -> usize {
    WRITTEN.load(Relaxed) + super::stored::WRITTEN_THROUGH.load(Relaxed)
}

/// The spill directory when none is configured: `DDFLOW_SPILL_DIR` if set, else the
/// system's temporary directory.
pub fn default_spill_dir() -> PathBuf {
    match std::env::var_os("DDFLOW_SPILL_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => std::env::temp_dir(),
    }
}

/// Where and when merges write their output through to files (see [`write_through_dir`]).
#[derive(Clone, Debug)]
struct WriteThrough {
    dir: Arc<PathBuf>,
    /// Write through when the live heap bytes plus the output's would pass this...
    above: usize,
    /// ...and the output would be at least this large.
    min_bytes: usize,
}

thread_local! {
    static WRITE_THROUGH: std::cell::RefCell<Option<WriteThrough>> =
        const { std::cell::RefCell::new(None) };
}

/// Lets merges on the calling thread write large outputs through to files in a spill
/// directory while it lives (see [`write_through_dir`]); the previous setting after.
pub struct WriteThroughScope {
    prev: Option<WriteThrough>,
}

impl WriteThroughScope {
    /// Merges whose output would be at least `min_bytes` and take the live heap bytes past
    /// `above` write it to files in `dir`; `dir` `None`: every merge builds on the heap.
    pub fn new(dir: Option<Arc<PathBuf>>, above: usize, min_bytes: usize) -> WriteThroughScope {
        let next = dir.map(|dir| WriteThrough {
            dir,
            above,
            min_bytes,
        });
        WriteThroughScope {
            prev: WRITE_THROUGH.with(|w| w.replace(next)),
        }
    }
}

impl Drop for WriteThroughScope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        WRITE_THROUGH.with(|w| *w.borrow_mut() = prev);
    }
}

/// Whether a [`WriteThroughScope`] with a directory is set on the calling thread.
pub fn write_through_set() -> bool {
    WRITE_THROUGH.with(|w| w.borrow().is_some())
}

/// The directory a merge whose output would be about `bytes` should write it through to
/// (see `stored.rs`): set by the engine under a memory limit ([`WriteThroughScope`]), when
/// the output is large and building it on the heap would take the live bytes past the
/// share of the limit spilling brings them back to. `None`: build it on the heap.
pub(crate) fn write_through_dir(bytes: usize) -> Option<Arc<PathBuf>> {
    WRITE_THROUGH.with(|w| {
        let w = w.borrow();
        let w = w.as_ref()?;
        (bytes >= w.min_bytes && crate::memory::live_bytes().saturating_add(bytes) > w.above)
            .then(|| w.dir.clone())
    })
}

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn spill_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Spill(format!("spill file {}: {what}", path.display()))
}

/// Writes `sections` to a new file at `path` (see the module docs); returns its length.
pub(crate) fn write_sections(path: &Path, sections: &[&[u8]]) -> Result<usize> {
    let mut lens = Vec::with_capacity(sections.len() * 8);
    for s in sections {
        lens.extend_from_slice(&(s.len() as u64).to_ne_bytes());
    }
    let zeros = [0u8; 8];
    let mut crc = crc32fast::Hasher::new();
    crc.update(&lens);
    let mut at = HEADER + lens.len();
    let mut pads = Vec::with_capacity(sections.len());
    for s in sections {
        let pad = pad8(at) - at;
        crc.update(&zeros[..pad]);
        crc.update(s);
        pads.push(pad);
        at += pad + s.len();
    }
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_ne_bytes());
    header.extend_from_slice(&(sections.len() as u32).to_ne_bytes());
    header.extend_from_slice(&crc.finalize().to_ne_bytes());
    header.extend_from_slice(&[0u8; 4]);
    let write = || -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        w.write_all(&header)?;
        w.write_all(&lens)?;
        for (s, &pad) in sections.iter().zip(&pads) {
            w.write_all(&zeros[..pad])?;
            w.write_all(s)?;
        }
        w.flush()
    };
    write().map_err(|e| spill_error(path, format!("cannot write: {e}")))?;
    WRITTEN.fetch_add(at, Relaxed);
    Ok(at)
}

/// The sections of a mapped spill file, handed out in order as [`Stored`] views.
pub(crate) struct Sections {
    map: Arc<Mapping>,
    /// Byte offset and byte length of each section.
    spans: Vec<(usize, usize)>,
    next: usize,
}

impl Sections {
    /// Maps the spill file at `path` and checks it: magic, version, the section byte
    /// lengths `expect`, the file's length and the checksum.
    pub(crate) fn map(path: &Path, expect: &[usize]) -> Result<Sections> {
        let file = std::fs::File::open(path)
            .map_err(|e| spill_error(path, format!("cannot open: {e}")))?;
        let len = file
            .metadata()
            .map_err(|e| spill_error(path, format!("cannot read its size: {e}")))?
            .len() as usize;
        let lens_end = HEADER + 8 * expect.len();
        if len < lens_end {
            return Err(spill_error(
                path,
                format!("truncated: {len} bytes, shorter than its header ({lens_end} bytes)"),
            ));
        }
        let map =
            Mapping::new(&file, len).map_err(|e| spill_error(path, format!("cannot map: {e}")))?;
        let bytes = map.bytes();
        let word = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        if &bytes[..8] != MAGIC {
            return Err(spill_error(path, "not a ddflow spill file (bad magic)"));
        }
        if word(8) != VERSION {
            return Err(spill_error(
                path,
                format!("format version {} (expected {VERSION})", word(8)),
            ));
        }
        if word(12) as usize != expect.len() {
            return Err(spill_error(
                path,
                format!("{} sections (expected {})", word(12), expect.len()),
            ));
        }
        let mut spans = Vec::with_capacity(expect.len());
        let mut at = lens_end;
        for (i, &want) in expect.iter().enumerate() {
            let p = HEADER + 8 * i;
            let got = u64::from_ne_bytes(bytes[p..p + 8].try_into().expect("8 bytes")) as usize;
            if got != want {
                return Err(spill_error(
                    path,
                    format!("section {i} has {got} bytes (expected {want})"),
                ));
            }
            at = pad8(at);
            spans.push((at, got));
            at += got;
        }
        if len != at {
            return Err(spill_error(
                path,
                format!("{len} bytes long (expected {at}): truncated or extended"),
            ));
        }
        let crc = crc32fast::hash(&bytes[HEADER..]);
        if crc != word(16) {
            return Err(spill_error(
                path,
                format!(
                    "checksum mismatch (stored {:08x}, read {crc:08x})",
                    word(16)
                ),
            ));
        }
        Ok(Sections {
            map: Arc::new(map),
            spans,
            next: 0,
        })
    }

    /// The next section as a view of the elements of `like`'s type.
    fn take<T: Pod>(&mut self, _like: &Stored<T>) -> Stored<T> {
        let (offset, bytes) = self.spans[self.next];
        self.next += 1;
        Stored::mapped(self.map.clone(), offset, bytes / std::mem::size_of::<T>())
    }
}

impl Words {
    fn bytes(&self) -> &[u8] {
        match self {
            Words::U64(v) => v.as_bytes(),
            Words::U32(v) => v.as_bytes(),
        }
    }

    fn remapped(&self, s: &mut Sections) -> Words {
        match self {
            Words::U64(v) => Words::U64(s.take(v)),
            Words::U32(v) => Words::U32(s.take(v)),
        }
    }

    fn mapped_bytes(&self) -> usize {
        match self {
            Words::U64(v) => v.mapped_bytes(),
            Words::U32(v) => v.mapped_bytes(),
        }
    }
}

impl Batch {
    /// The batch's big vectors as bytes, in the order [`Batch::remapped`] takes them.
    fn layers(&self) -> Vec<&[u8]> {
        let mut out = vec![
            self.keys.bytes(),
            self.key_offs.as_bytes(),
            self.vals.bytes(),
        ];
        if let Some(o) = &self.val_offs {
            out.push(o.as_bytes());
        }
        match &self.times {
            Times::Single(_) => {}
            Times::Each(TimeVec::Narrow(t)) => out.push(t.as_bytes()),
            Times::Each(TimeVec::Wide(t)) => out.push(t.as_bytes()),
            Times::Indexed { idx, .. } => out.push(idx.as_bytes()),
        }
        match &self.diffs {
            Diffs::Ones => {}
            Diffs::Sparse { idx, diffs } => {
                out.push(idx.as_bytes());
                out.push(diffs.as_bytes());
            }
            Diffs::Dense(d) => out.push(d.as_bytes()),
        }
        out
    }

    /// An equal batch whose big vectors are the next sections of `s` (see [`Batch::layers`]).
    fn remapped(&self, s: &mut Sections) -> Batch {
        let keys = self.keys.remapped(s);
        let key_offs = s.take(&self.key_offs);
        let vals = self.vals.remapped(s);
        let val_offs = self.val_offs.as_ref().map(|o| s.take(o));
        let times = match &self.times {
            Times::Single(t) => Times::Single(*t),
            Times::Each(TimeVec::Narrow(t)) => Times::Each(TimeVec::Narrow(s.take(t))),
            Times::Each(TimeVec::Wide(t)) => Times::Each(TimeVec::Wide(s.take(t))),
            Times::Indexed { distinct, idx } => Times::Indexed {
                distinct: distinct.clone(),
                idx: s.take(idx),
            },
        };
        let diffs = match &self.diffs {
            Diffs::Ones => Diffs::Ones,
            Diffs::Sparse { idx, diffs } => Diffs::Sparse {
                idx: s.take(idx),
                diffs: s.take(diffs),
            },
            Diffs::Dense(d) => Diffs::Dense(s.take(d)),
        };
        Batch {
            desc: self.desc.clone(),
            key_width: self.key_width,
            val_width: self.val_width,
            keys,
            key_offs,
            vals,
            val_offs,
            times,
            diffs,
        }
    }

    /// Writes the batch to a new file in `dir` and returns an equal batch that reads its
    /// big vectors from a read-only map of that file (see the module docs). The file is
    /// unlinked before this returns; its pages stay until the returned batch is dropped.
    ///
    /// Errors: [`Error::Spill`] naming the file if it cannot be written, mapped or fails its
    /// checks.
    pub fn spill(&self, dir: &Path) -> Result<Batch> {
        let name = format!(
            "ddflow-spill-{}-{}.bin",
            std::process::id(),
            SEQ.fetch_add(1, Relaxed)
        );
        let path = dir.join(name);
        let layers = self.layers();
        let lens: Vec<usize> = layers.iter().map(|l| l.len()).collect();
        let mapped = write_sections(&path, &layers).and_then(|_| Sections::map(&path, &lens));
        // Unlinked whatever happened: the map (if any) keeps the pages.
        let _ = std::fs::remove_file(&path);
        Ok(self.remapped(&mut mapped?))
    }

    /// Bytes of the batch's vectors that live in a mapped spill file (0 for a heap batch).
    pub fn spilled_bytes(&self) -> usize {
        let mut bytes = self.keys.mapped_bytes()
            + self.key_offs.mapped_bytes()
            + self.vals.mapped_bytes()
            + self.val_offs.as_ref().map_or(0, |o| o.mapped_bytes());
        bytes += match &self.times {
            Times::Single(_) => 0,
            Times::Each(TimeVec::Narrow(t)) => t.mapped_bytes(),
            Times::Each(TimeVec::Wide(t)) => t.mapped_bytes(),
            Times::Indexed { idx, .. } => idx.mapped_bytes(),
        };
        bytes
            + match &self.diffs {
                Diffs::Ones => 0,
                Diffs::Sparse { idx, diffs } => idx.mapped_bytes() + diffs.mapped_bytes(),
                Diffs::Dense(d) => d.mapped_bytes(),
            }
    }

    /// Whether the batch reads from a spill file.
    pub fn is_spilled(&self) -> bool {
        self.key_offs.is_mapped()
    }
}

#[cfg(test)]
#[path = "spill_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "write_through_tests.rs"]
mod write_through_tests;
