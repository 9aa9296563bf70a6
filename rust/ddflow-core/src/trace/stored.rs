//! Storage of a batch's vectors: owned on the heap, or a read-only view of a memory-mapped
//! spill file, or (while a builder writes it) a vector growing in a writable map of a file.
//!
//! [`Stored<T>`] dereferences to `&[T]` either way, so readers (cursors, merges, accessors)
//! do not know where a batch lives. Builders only ever hold the owned form and mutate it
//! through the `Vec`-like methods below; mutating a mapped vector first copies it to the
//! heap (which no code path does today: batches are immutable once built).
//!
//! Mapped pages are file-backed page cache the OS can write back and drop, and they are not
//! counted by the counting allocator (`crate::memory`): the memory limit bounds the heap.
//! See `spill.rs` for the file format.
//!
//! A builder that writes a large merge's output while the heap is near the memory limit
//! ([`super::spill::write_through_dir`]) grows its layers as [`FileVec`]s instead: each a
//! shared writable map of its own unlinked file in the spill directory, whose disk blocks
//! are reserved (`posix_fallocate`) before they are written, so a full disk is a fallback
//! to the heap, never a fault. Finishing the layer ([`Stored::shrink_to_fit`]) turns it
//! into a read-only [`Stored::Mapped`] view of the same pages: the output never passes
//! through the heap and is not written a second time by a later spill.

use std::marker::PhantomData;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::Arc;

/// Plain data that can be viewed in place in a mapped file: no pointers, no padding, every
/// bit pattern valid, alignment at most 8.
///
/// # Safety
/// Implement only for types that satisfy the above.
pub(crate) unsafe trait Pod: Copy + Send + Sync + 'static {}

// SAFETY: integers and arrays of integers: no padding, every bit pattern valid.
unsafe impl Pod for u8 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for usize {}
unsafe impl Pod for i64 {}
unsafe impl Pod for [u32; 2] {}
// SAFETY: `Time` is `#[repr(transparent)]` over `[u64; 4]`.
unsafe impl Pod for crate::lattice::Time {}

/// A read-only shared memory map of a whole file (unmapped on drop).
pub(crate) struct Mapping {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and lives until drop; sharing `&[u8]` views is sound.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len > 0` bytes of `file` read-only.
    pub(crate) fn new(file: &std::fs::File, len: usize) -> std::io::Result<Mapping> {
        Mapping::map(file, len, libc::PROT_READ)
    }

    /// Maps `len > 0` bytes of `file` readable and writable (shared: writes go to the file).
    fn new_writable(file: &std::fs::File, len: usize) -> std::io::Result<Mapping> {
        Mapping::map(file, len, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// Maps `len > 0` bytes of `file` shared, with protection `prot`.
    fn map(file: &std::fs::File, len: usize, prot: libc::c_int) -> std::io::Result<Mapping> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "cannot map an empty file",
            ));
        }
        // SAFETY: a fresh shared mapping of an open file; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: p as *const u8,
            len,
        })
    }

    /// Grows the mapping to `len` bytes (it may move). Only for a mapping nothing else views.
    fn grow(&mut self, len: usize) -> std::io::Result<()> {
        // SAFETY: remaps exactly what this `Mapping` maps; the caller holds the only view.
        let p = unsafe {
            libc::mremap(
                self.ptr as *mut libc::c_void,
                self.len,
                len,
                libc::MREMAP_MAYMOVE,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        self.ptr = p as *const u8;
        self.len = len;
        Ok(())
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; no view outlives `self` (views hold an Arc).
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

impl std::fmt::Debug for Mapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapping({} bytes)", self.len)
    }
}

/// A vector being written into a shared writable map of an unlinked file (see the module
/// docs). Elements are `Pod`, so the file's bytes are the elements.
pub(crate) struct FileVec<T> {
    /// The open file (already unlinked), kept to reserve more blocks when growing.
    file: std::fs::File,
    map: Mapping,
    /// Elements written.
    len: usize,
    /// Elements the file has blocks reserved for (the map's length).
    cap: usize,
    /// The directory the file was created in (for the layers derived from this one).
    dir: Arc<PathBuf>,
    _t: PhantomData<T>,
}

/// Bytes written to files by [`FileVec`]s that became mapped layers.
pub(crate) static WRITTEN_THROUGH: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Write-through files created by this process (for unique names).
static FILE_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl<T: Pod> FileVec<T> {
    /// An empty vector with blocks reserved for `cap` elements in a new file in `dir`.
    fn create(dir: &Arc<PathBuf>, cap: usize) -> std::io::Result<FileVec<T>> {
        use std::sync::atomic::Ordering::Relaxed;
        let cap = cap.max(4096 / std::mem::size_of::<T>().max(1));
        let path = dir.join(format!(
            "ddflow-build-{}-{}.bin",
            std::process::id(),
            FILE_SEQ.fetch_add(1, Relaxed)
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // Unlinked at once: the open file and then the map keep the blocks, nothing is
        // left on disk after the layer is dropped or the process dies.
        let _ = std::fs::remove_file(&path);
        let bytes = cap * std::mem::size_of::<T>();
        reserve(&file, bytes)?;
        let map = Mapping::new_writable(&file, bytes)?;
        Ok(FileVec {
            file,
            map,
            len: 0,
            cap,
            dir: dir.clone(),
            _t: PhantomData,
        })
    }

    /// Makes room for `extra` more elements: doubles the reserved blocks and the map.
    fn reserve(&mut self, extra: usize) -> std::io::Result<()> {
        let need = self.len + extra;
        if need <= self.cap {
            return Ok(());
        }
        let cap = need.max(self.cap * 2);
        let bytes = cap * std::mem::size_of::<T>();
        reserve(&self.file, bytes)?;
        self.map.grow(bytes)?;
        self.cap = cap;
        Ok(())
    }

    #[inline]
    fn as_mut_ptr(&mut self) -> *mut T {
        self.map.ptr as *mut T
    }

    /// The written elements, mutable.
    #[inline]
    fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: the map holds `cap >= len` elements, aligned (page-aligned start), of
        // which the first `len` were written; `&mut self` is the only view.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len) }
    }

    /// Appends `xs`, or returns `false` (nothing appended) if no room could be reserved.
    #[inline]
    fn try_extend_from_slice(&mut self, xs: &[T]) -> bool {
        if self.len + xs.len() > self.cap && self.reserve(xs.len()).is_err() {
            return false;
        }
        // SAFETY: room for `xs` was reserved above; `xs` cannot alias the map's unwritten
        // tail.
        unsafe {
            std::ptr::copy_nonoverlapping(xs.as_ptr(), self.as_mut_ptr().add(self.len), xs.len())
        };
        self.len += xs.len();
        true
    }

    /// Appends `x`, or returns `false` if no room could be reserved.
    #[inline]
    fn try_push(&mut self, x: T) -> bool {
        if self.len == self.cap && self.reserve(1).is_err() {
            return false;
        }
        // SAFETY: `len < cap` now.
        unsafe { self.as_mut_ptr().add(self.len).write(x) };
        self.len += 1;
        true
    }

    /// The written elements as a read-only view of the same pages; the file is shortened to
    /// them (releasing the blocks reserved beyond).
    fn into_mapped(self) -> Stored<T> {
        use std::sync::atomic::Ordering::Relaxed;
        let bytes = self.len * std::mem::size_of::<T>();
        if self.len == 0 {
            return Stored::Owned(Vec::new());
        }
        // Pages past the new end are never read (views stop at `len`).
        let _ = self.file.set_len(bytes as u64);
        WRITTEN_THROUGH.fetch_add(bytes, Relaxed);
        Stored::Mapped {
            ptr: self.map.ptr as *const T,
            map: Arc::new(self.map),
            len: self.len,
        }
    }
}

/// Reserves disk blocks for the first `bytes` bytes of `file` (and extends it to them), so
/// that writing them through a map cannot fail for want of space.
fn reserve(file: &std::fs::File, bytes: usize) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: plain system call on an open descriptor.
    let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, bytes as libc::off_t) };
    if r != 0 {
        return Err(std::io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// A vector on the heap, a slice of a mapped spill file, or a vector being written through
/// to a file (see the module docs).
///
/// Both file variants carry the elements' address and count beside what owns them, so
/// reading any variant is two loads in line (`Deref`): readers' and builders' loops over a
/// heap vector compile as they would over a plain `Vec`.
pub(crate) enum Stored<T> {
    /// On the heap.
    Owned(Vec<T>),
    /// Being written by a builder into a file ([`Stored::shrink_to_fit`] maps it read-only);
    /// `ptr` and `len` mirror `file`'s map and length after every change.
    Writing {
        file: Box<FileVec<T>>,
        ptr: *const T,
        len: usize,
    },
    /// `len` elements at `ptr` (aligned for `T`) inside `map`.
    Mapped {
        map: Arc<Mapping>,
        ptr: *const T,
        len: usize,
    },
}

// SAFETY: the file variants' pointers address memory their `Box<FileVec>` or `Arc<Mapping>`
// owns (and which only `&mut self` writes), so `Stored<T>` is as thread-safe as a `Vec<T>`.
unsafe impl<T: Send> Send for Stored<T> {}
unsafe impl<T: Sync> Sync for Stored<T> {}

impl<T: Pod> Stored<T> {
    /// A view of `len` elements at byte `offset` of `map`. Panics if the range is outside
    /// the map or misaligned (the spill reader checks lengths before).
    pub(crate) fn mapped(map: Arc<Mapping>, offset: usize, len: usize) -> Stored<T> {
        let bytes = len * std::mem::size_of::<T>();
        assert!(offset + bytes <= map.len, "mapped slice outside its file");
        assert!(
            (map.ptr as usize + offset).is_multiple_of(std::mem::align_of::<T>()),
            "mapped slice misaligned"
        );
        // SAFETY: inside the map, checked above.
        let ptr = unsafe { map.ptr.add(offset) } as *const T;
        Stored::Mapped { map, ptr, len }
    }

    /// The elements' bytes (native endianness).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let s: &[T] = self;
        // SAFETY: `T: Pod` has no padding, so its bytes are initialised.
        unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
    }
}

impl<T> Stored<T> {
    /// Whether the elements live in a mapped file.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self, Stored::Mapped { .. })
    }

    /// Heap capacity in elements (0 when in a file: the pages are not on the heap).
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Stored::Owned(v) => v.capacity(),
            Stored::Writing { .. } | Stored::Mapped { .. } => 0,
        }
    }

    /// Bytes in a mapped file (0 when owned or still being written).
    pub(crate) fn mapped_bytes(&self) -> usize {
        match self {
            Stored::Owned(_) | Stored::Writing { .. } => 0,
            Stored::Mapped { len, .. } => len * std::mem::size_of::<T>(),
        }
    }
}

impl<T: Pod> Stored<T> {
    /// An empty owned vector with room for `cap` elements.
    pub(crate) fn with_capacity(cap: usize) -> Stored<T> {
        Stored::Owned(Vec::with_capacity(cap))
    }

    /// An empty vector with room for `cap` elements, written through to a new file in
    /// `dir` if given (on the heap if none, or if the file cannot be made).
    pub(crate) fn with_capacity_in(dir: Option<&Arc<PathBuf>>, cap: usize) -> Stored<T> {
        match dir.map(|d| FileVec::create(d, cap)) {
            Some(Ok(f)) => Stored::writing(Box::new(f)),
            _ => Stored::with_capacity(cap),
        }
    }

    /// An empty vector with room for `cap` elements, stored as `self` is being written: in
    /// a new file of the same directory if `self` is [`Stored::Writing`], else on the heap.
    pub(crate) fn with_capacity_like<U: Pod>(&self, cap: usize) -> Stored<U> {
        let dir = match self {
            Stored::Writing { file, .. } => Some(&file.dir),
            _ => None,
        };
        Stored::with_capacity_in(dir, cap)
    }

    /// The owned vector, copying mapped or written elements to the heap first.
    pub(crate) fn vec_mut(&mut self) -> &mut Vec<T> {
        if !matches!(self, Stored::Owned(_)) {
            *self = Stored::Owned(self.to_vec());
        }
        match self {
            Stored::Owned(v) => v,
            _ => unreachable!(),
        }
    }

    /// The elements, mutable (a mapped vector is copied to the heap first).
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Stored::Owned(v) => v,
            Stored::Writing { file, .. } => file.as_mut_slice(),
            Stored::Mapped { .. } => self.vec_mut(),
        }
    }

    /// Appends `x`.
    #[inline]
    pub(crate) fn push(&mut self, x: T) {
        match self {
            Stored::Owned(v) => v.push(x),
            _ => self.push_cold(x),
        }
    }

    /// [`Stored::push`] to a file or a mapped vector (kept out of the heap path's loops).
    #[cold]
    #[inline(never)]
    fn push_cold(&mut self, x: T) {
        if let Stored::Writing { file, ptr, len } = self {
            if file.try_push(x) {
                (*ptr, *len) = (file.map.ptr as *const T, file.len);
                return;
            }
        }
        self.vec_mut().push(x)
    }

    /// Appends `xs`.
    #[inline]
    pub(crate) fn extend_from_slice(&mut self, xs: &[T]) {
        match self {
            Stored::Owned(v) => v.extend_from_slice(xs),
            _ => self.extend_from_slice_cold(xs),
        }
    }

    /// [`Stored::extend_from_slice`] to a file or a mapped vector.
    #[cold]
    #[inline(never)]
    fn extend_from_slice_cold(&mut self, xs: &[T]) {
        if let Stored::Writing { file, ptr, len } = self {
            if file.try_extend_from_slice(xs) {
                (*ptr, *len) = (file.map.ptr as *const T, file.len);
                return;
            }
        }
        self.vec_mut().extend_from_slice(xs)
    }

    /// Keeps the first `len` elements.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        match self {
            Stored::Owned(v) => v.truncate(len),
            Stored::Writing { file, len: l, .. } => {
                file.len = file.len.min(len);
                *l = file.len;
            }
            Stored::Mapped { .. } => self.vec_mut().truncate(len),
        }
    }

    /// Shrinks heap capacity to the length; a vector being written through to a file
    /// becomes a read-only view of it ([`Stored::Mapped`]); nothing when mapped.
    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            Stored::Owned(v) => v.shrink_to_fit(),
            Stored::Writing { .. } => {
                let Stored::Writing { file, .. } = std::mem::take(self) else {
                    unreachable!()
                };
                *self = (*file).into_mapped();
            }
            Stored::Mapped { .. } => {}
        }
    }
}

/// Elements appended one at a time through a small buffer (a file-backed vector copies
/// them in runs).
const EXTEND_RUN: usize = 256;

impl<T: Pod> Extend<T> for Stored<T> {
    #[inline]
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        match self {
            Stored::Owned(v) => v.extend(iter),
            _ => self.extend_cold(iter),
        }
    }
}

impl<T: Pod> Stored<T> {
    /// [`Extend::extend`] to a file or a mapped vector.
    #[cold]
    #[inline(never)]
    fn extend_cold<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        match self {
            Stored::Owned(v) => v.extend(iter),
            Stored::Writing { .. } => {
                let mut buf: [std::mem::MaybeUninit<T>; EXTEND_RUN] =
                    [const { std::mem::MaybeUninit::uninit() }; EXTEND_RUN];
                let mut n = 0;
                for x in iter {
                    buf[n].write(x);
                    n += 1;
                    if n == EXTEND_RUN {
                        // SAFETY: the first `n` elements of `buf` were written.
                        let run =
                            unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const T, n) };
                        self.extend_from_slice(run);
                        n = 0;
                    }
                }
                // SAFETY: as above.
                let run = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const T, n) };
                self.extend_from_slice(run);
            }
            Stored::Mapped { .. } => self.vec_mut().extend(iter),
        }
    }
}

impl<'a, T: Pod + 'a> Extend<&'a T> for Stored<T> {
    #[inline]
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied())
    }
}

impl<T> FromIterator<T> for Stored<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Stored::Owned(iter.into_iter().collect())
    }
}

impl<T> From<Vec<T>> for Stored<T> {
    fn from(v: Vec<T>) -> Self {
        Stored::Owned(v)
    }
}

impl<T> Default for Stored<T> {
    fn default() -> Self {
        Stored::Owned(Vec::new())
    }
}

impl<T> Stored<T> {
    /// A vector being written to `file`.
    fn writing(file: Box<FileVec<T>>) -> Stored<T> {
        let (ptr, len) = (file.map.ptr as *const T, file.len);
        Stored::Writing { file, ptr, len }
    }
}

impl<T> Deref for Stored<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Stored::Owned(v) => v,
            // SAFETY: `ptr` addresses `len` written elements (aligned: `mapped` checked a
            // view, a file's map starts on a page) that `map` or `file` keeps mapped while
            // `self` is borrowed; a view's pages are never written.
            Stored::Mapped { ptr, len, .. } | Stored::Writing { ptr, len, .. } => unsafe {
                std::slice::from_raw_parts(*ptr, *len)
            },
        }
    }
}

impl<T: Clone> Clone for Stored<T> {
    fn clone(&self) -> Self {
        match self {
            Stored::Owned(v) => Stored::Owned(v.clone()),
            Stored::Writing { .. } => Stored::Owned(self.to_vec()),
            Stored::Mapped { map, ptr, len } => Stored::Mapped {
                map: map.clone(),
                ptr: *ptr,
                len: *len,
            },
        }
    }
}

impl<T: PartialEq> PartialEq for Stored<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Stored<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Stored<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}
