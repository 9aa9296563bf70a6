//! Storage of a batch's vectors: owned on the heap, or a read-only view of a memory-mapped
//! spill file.
//!
//! [`Stored<T>`] dereferences to `&[T]` either way, so readers (cursors, merges, accessors)
//! do not know where a batch lives. Builders only ever hold the owned form and mutate it
//! through the `Vec`-like methods below; mutating a mapped vector first copies it to the
//! heap (which no code path does today: batches are immutable once built).
//!
//! Mapped pages are file-backed page cache the OS can write back and drop, and they are not
//! counted by the counting allocator (`crate::memory`): the memory limit bounds the heap.
//! See `spill.rs` for the file format.

use std::marker::PhantomData;
use std::ops::Deref;
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
        use std::os::fd::AsRawFd;
        if len == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "cannot map an empty file",
            ));
        }
        // SAFETY: a fresh shared read-only mapping of an open file; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
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

/// A vector on the heap or a slice of a mapped spill file (see the module docs).
pub(crate) enum Stored<T> {
    /// On the heap.
    Owned(Vec<T>),
    /// `len` elements at byte `offset` (aligned for `T`) of `map`.
    Mapped {
        map: Arc<Mapping>,
        offset: usize,
        len: usize,
        _t: PhantomData<T>,
    },
}

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
        Stored::Mapped {
            map,
            offset,
            len,
            _t: PhantomData,
        }
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

    /// Heap capacity in elements (0 when mapped: the pages are not on the heap).
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Stored::Owned(v) => v.capacity(),
            Stored::Mapped { .. } => 0,
        }
    }

    /// Bytes in a mapped file (0 when owned).
    pub(crate) fn mapped_bytes(&self) -> usize {
        match self {
            Stored::Owned(_) => 0,
            Stored::Mapped { len, .. } => len * std::mem::size_of::<T>(),
        }
    }
}

impl<T: Copy> Stored<T> {
    /// An empty owned vector with room for `cap` elements.
    pub(crate) fn with_capacity(cap: usize) -> Stored<T> {
        Stored::Owned(Vec::with_capacity(cap))
    }

    /// The owned vector, copying mapped elements to the heap first.
    pub(crate) fn vec_mut(&mut self) -> &mut Vec<T> {
        if let Stored::Mapped { .. } = self {
            *self = Stored::Owned(self.to_vec());
        }
        match self {
            Stored::Owned(v) => v,
            Stored::Mapped { .. } => unreachable!(),
        }
    }

    /// Appends `x`.
    #[inline]
    pub(crate) fn push(&mut self, x: T) {
        self.vec_mut().push(x)
    }

    /// Appends `xs`.
    #[inline]
    pub(crate) fn extend_from_slice(&mut self, xs: &[T]) {
        self.vec_mut().extend_from_slice(xs)
    }

    /// Keeps the first `len` elements.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.vec_mut().truncate(len)
    }

    /// Shrinks heap capacity to the length (nothing when mapped).
    pub(crate) fn shrink_to_fit(&mut self) {
        if let Stored::Owned(v) = self {
            v.shrink_to_fit()
        }
    }
}

impl<T: Copy> Extend<T> for Stored<T> {
    #[inline]
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.vec_mut().extend(iter)
    }
}

impl<'a, T: Copy + 'a> Extend<&'a T> for Stored<T> {
    #[inline]
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.vec_mut().extend(iter)
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

impl<T> Deref for Stored<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Stored::Owned(v) => v,
            Stored::Mapped {
                map, offset, len, ..
            } => {
                // SAFETY: `mapped` checked the range and alignment; the map outlives the
                // borrow (we hold an Arc to it) and is never written.
                unsafe { std::slice::from_raw_parts(map.ptr.add(*offset) as *const T, *len) }
            }
        }
    }
}

impl<T: Clone> Clone for Stored<T> {
    fn clone(&self) -> Self {
        match self {
            Stored::Owned(v) => Stored::Owned(v.clone()),
            Stored::Mapped {
                map, offset, len, ..
            } => Stored::Mapped {
                map: map.clone(),
                offset: *offset,
                len: *len,
                _t: PhantomData,
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
