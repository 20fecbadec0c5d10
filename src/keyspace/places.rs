//! Where a resource was granted: a fingerprint of the database and key name that every stored
//! value carries, so that a value found under another key or database (RENAME, MOVE, SWAPDB,
//! RESTORE under a new name) is known not to be held there.

/// `place` of a lock that was moved away from the key it was granted under: never held.
pub const MOVED: u64 = 0;

/// Where a lock is granted: a fingerprint of the database and key name, stored in the lock.
/// A lock found under another key or database (RENAME, MOVE, SWAPDB, RESTORE under a new name)
/// is not held there: its token was issued for another resource and may be smaller than one
/// already issued for this one. Never [`MOVED`].
pub fn place(db: i32, key: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(&db.to_le_bytes());
    hasher.write(key);
    hasher.finish() | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_differ_by_key_and_database_and_are_never_moved() {
        assert_ne!(place(0, b"lock:a"), place(0, b"lock:b"));
        assert_ne!(place(0, b"lock:a"), place(1, b"lock:a"));
        assert_eq!(place(3, b"x"), place(3, b"x"));
        assert_ne!(place(0, b""), MOVED);
    }

    #[test]
    fn places_are_stable_across_builds() {
        // Saved in RDB files: the hash must never change. FNV-1a 64 of 0i32 LE ++ "lock:a", | 1
        // (computed independently).
        assert_eq!(place(0, b"lock:a"), 0xc357_485f_5bc8_c9db);
    }
}
