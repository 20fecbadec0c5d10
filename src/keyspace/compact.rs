//! A resource with one exclusive holder — a plain lock — as it lives in Redis memory (the
//! `dlocklock` data type): the compact storage form, a single allocation from Redis's allocator
//! (so `used_memory` and `MEMORY USAGE` see it), laid out as
//!
//! `token u64 | deadline u64 | place u64 | holds u16 | owner length u16 | owner bytes`
//!
//! (little-endian, 28 bytes of header). The owner is kept packed when it starts with lower-case
//! hex digits (see [`super::owner`]; the top bit of the length says so): a client's 32-digit
//! owner takes 17 bytes, and the lock fills jemalloc's 48-byte class. The next bit says the
//! deadline is only a ceiling and the key's TTL rules below it (a lock from a version-1 RDB or
//! an AOF's `DLOCK.APPLY` without `PXAT`, until the key's TTL event settles it).

use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr::NonNull;

use super::owner::{self, OwnerBuf};

const TOKEN_AT: usize = 0;
const DEADLINE_AT: usize = 8;
const PLACE_AT: usize = 16;
const HOLDS_AT: usize = 24;
const LEN_AT: usize = 26;
const OWNER_AT: usize = 28;
/// Set in the owner length when the owner is stored packed.
const PACKED: u16 = 1 << 15;
/// Set in the owner length when the key's TTL, if earlier, is the deadline.
const FOLLOWS_KEY_TTL: u16 = 1 << 14;
/// The bits of the owner length that are the length.
const LEN_BITS: u16 = FOLLOWS_KEY_TTL - 1;

/// A plain lock's fields, as the keyspace, the RDB codec and the replication effects exchange
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub owner: &'a [u8],
    pub token: u64,
    pub holds: u16,
    /// Unix ms.
    pub deadline_ms: u64,
    /// Where the lock was granted (see [`super::places::place`]); [`super::places::MOVED`] once it was moved.
    pub place: u64,
}

/// A lock value read through a shared borrow of the key (or of a type callback's argument).
#[derive(Clone, Copy)]
pub struct CompactRef<'a> {
    ptr: NonNull<u8>,
    _value: PhantomData<&'a [u8]>,
}

impl<'a> CompactRef<'a> {
    /// # Safety
    /// `ptr` must point to a dlock value that stays alive and unmodified for `'a`.
    pub unsafe fn new(ptr: NonNull<c_void>) -> Self {
        CompactRef {
            ptr: ptr.cast(),
            _value: PhantomData,
        }
    }

    /// The owner's bytes as stored, and whether they are packed.
    fn stored_owner(&self) -> (&'a [u8], bool) {
        let len = u16::from_le_bytes(self.read(LEN_AT));
        let stored = usize::from(len & LEN_BITS);
        // SAFETY: the value was allocated with OWNER_AT + stored bytes (see `OwnedCompact::new`)
        // and lives for 'a (the contract of `CompactRef::new`).
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(OWNER_AT), stored) };
        (bytes, len & PACKED != 0)
    }

    /// The owner as the client sent it, unpacked into `out`.
    pub fn owner_into(&self, out: &mut OwnerBuf) {
        let (stored, packed) = self.stored_owner();
        owner::unpack(stored, packed, out);
    }

    /// Every field, the owner unpacked into `buf`.
    pub fn record_in<'b>(&self, buf: &'b mut OwnerBuf) -> Record<'b> {
        self.owner_into(buf);
        Record {
            owner: buf.as_slice(),
            token: self.token(),
            holds: self.holds(),
            deadline_ms: self.deadline_ms(),
            place: self.place(),
        }
    }

    pub fn token(&self) -> u64 {
        u64::from_le_bytes(self.read(TOKEN_AT))
    }

    pub fn holds(&self) -> u16 {
        u16::from_le_bytes(self.read(HOLDS_AT))
    }

    pub fn deadline_ms(&self) -> u64 {
        u64::from_le_bytes(self.read(DEADLINE_AT))
    }

    pub fn place(&self) -> u64 {
        u64::from_le_bytes(self.read(PLACE_AT))
    }

    /// Whether the key's TTL, when earlier, is the deadline (see the module docs).
    pub fn follows_key_ttl(&self) -> bool {
        u16::from_le_bytes(self.read(LEN_AT)) & FOLLOWS_KEY_TTL != 0
    }

    /// Bytes allocated for this lock (what `MEMORY USAGE` reports for the value).
    pub fn allocated_size(&self) -> usize {
        OWNER_AT + self.stored_owner().0.len()
    }

    fn read<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        // SAFETY: every field offset + N lies inside the header of a live value.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(at), out.as_mut_ptr(), N) };
        out
    }
}

/// A lock value changed in place through an exclusive borrow of its open key.
pub struct CompactMut<'a> {
    ptr: NonNull<u8>,
    _value: PhantomData<&'a mut [u8]>,
}

impl CompactMut<'_> {
    /// # Safety
    /// `ptr` must point to a dlock value that nothing else reads or writes for the borrow.
    pub unsafe fn new(ptr: NonNull<c_void>) -> Self {
        CompactMut {
            ptr: ptr.cast(),
            _value: PhantomData,
        }
    }

    pub fn set_token(&mut self, token: u64) {
        self.write(TOKEN_AT, &token.to_le_bytes());
    }

    pub fn set_holds(&mut self, holds: u16) {
        self.write(HOLDS_AT, &holds.to_le_bytes());
    }

    pub fn set_deadline(&mut self, deadline_ms: u64) {
        self.write(DEADLINE_AT, &deadline_ms.to_le_bytes());
    }

    pub fn set_place(&mut self, place: u64) {
        self.write(PLACE_AT, &place.to_le_bytes());
    }

    /// The same value, read.
    pub fn as_ref(&self) -> CompactRef<'_> {
        // SAFETY: the value outlives this shared reborrow of the exclusive one.
        unsafe { CompactRef::new(self.ptr.cast()) }
    }

    pub fn follows_key_ttl(&self) -> bool {
        self.as_ref().follows_key_ttl()
    }

    pub fn deadline_ms(&self) -> u64 {
        self.as_ref().deadline_ms()
    }

    /// Sets or clears "the key's TTL, when earlier, is the deadline".
    pub fn set_follows_key_ttl(&mut self, follows: bool) {
        let len = u16::from_le_bytes(self.as_ref().read(LEN_AT)) & !FOLLOWS_KEY_TTL;
        let len = if follows { len | FOLLOWS_KEY_TTL } else { len };
        self.write(LEN_AT, &len.to_le_bytes());
    }

    fn write(&mut self, at: usize, bytes: &[u8]) {
        // SAFETY: header fields lie inside the allocation; the borrow is exclusive.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(at), bytes.len())
        }
    }
}

/// A lock value not yet handed to Redis: freed on drop unless [`OwnedCompact::into_raw`] gave it
/// to the keyspace.
pub struct OwnedCompact(NonNull<u8>);

impl OwnedCompact {
    /// Allocates a plain lock from Redis's allocator. `record.owner` is at most 256 bytes (validated
    /// by every caller); `None` if the allocator is unavailable.
    pub fn new(record: &Record<'_>) -> Option<OwnedCompact> {
        let pairs = owner::packed_pairs(record.owner);
        let stored = owner::stored_len(record.owner, pairs);
        let len = u16::try_from(stored).ok().filter(|&len| len <= LEN_BITS)?;
        let len = if pairs > 0 { len | PACKED } else { len };
        let alloc = crate::api!(RedisModule_Alloc)?;
        // SAFETY: RedisModule_Alloc is Redis's zmalloc: a valid allocation of the given size, or
        // an abort on out-of-memory like every other Redis allocation.
        let ptr = NonNull::new(unsafe { alloc(OWNER_AT + stored) })?;
        // SAFETY: freshly allocated with room for the header and the owner; nobody else has it.
        let mut lock = unsafe { CompactMut::new(ptr) };
        lock.write(LEN_AT, &len.to_le_bytes());
        // SAFETY: the allocation holds OWNER_AT + stored bytes; nobody else has it yet.
        let owner_bytes = unsafe {
            std::slice::from_raw_parts_mut(ptr.as_ptr().cast::<u8>().add(OWNER_AT), stored)
        };
        owner::pack(record.owner, pairs, owner_bytes);
        lock.set_token(record.token);
        lock.set_holds(record.holds);
        lock.set_deadline(record.deadline_ms);
        lock.set_place(record.place);
        Some(OwnedCompact(ptr.cast()))
    }

    /// Sets or clears "the key's TTL, when earlier, is the deadline".
    pub fn set_follows_key_ttl(&mut self, follows: bool) {
        // SAFETY: our allocation, not handed over yet; nobody else has it.
        unsafe { CompactMut::new(self.0.cast()) }.set_follows_key_ttl(follows);
    }

    /// Hands the allocation over (to the keyspace, or to Redis from `rdb_load`).
    pub fn into_raw(self) -> *mut c_void {
        let ptr = self.0.as_ptr().cast();
        std::mem::forget(self);
        ptr
    }

    /// # Safety
    /// `ptr` must be a dlock value Redis gave back to the module to free (the `free` callback).
    pub unsafe fn from_raw(ptr: NonNull<c_void>) -> OwnedCompact {
        OwnedCompact(ptr.cast())
    }
}

impl Drop for OwnedCompact {
    fn drop(&mut self) {
        if let Some(free) = crate::api!(RedisModule_Free) {
            // SAFETY: allocated by RedisModule_Alloc and owned by us (never handed over).
            unsafe { free(self.0.as_ptr().cast()) };
        }
    }
}
