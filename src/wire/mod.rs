//! What crosses the wire, shared by every layer that reads a command or answers one: the
//! arguments as Redis hands them over ([`Arg`]), their parsing ([`args`]) and every error
//! string a client can see ([`errors`]). It depends on nothing else in the module, so the
//! command layer and the layers below it (keyspace, waiting, replication, config) can all use it
//! without depending on each other.

pub mod args;
pub mod errors;
pub mod limits;
pub mod requests;
pub mod sets;

use redis_module::raw;

/// One argument of the current command, borrowed from Redis for the duration of the call.
#[repr(transparent)]
pub struct Arg(*mut raw::RedisModuleString);

impl Arg {
    pub fn as_bytes(&self) -> &[u8] {
        redis_module::RedisString::string_as_slice(self.0)
    }

    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// Wraps a string the caller keeps alive while the `Arg` is used.
    pub fn new(string: *mut raw::RedisModuleString) -> Arg {
        Arg(string)
    }
}

impl AsRef<[u8]> for Arg {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}
