//! The module's pure parsers, compiled from its own source files (the module itself is a
//! `cdylib` built with Redis's allocator, which cannot run outside Redis), and how a fuzz input
//! becomes a command's arguments.
#![allow(dead_code)]

pub mod keyspace;
pub mod wire;

/// A command's arguments out of fuzz bytes: split at 0xff (a byte no argument needs to hold for
/// these parsers to be exercised; any other byte, NUL included, stays in its argument).
pub fn arguments(data: &[u8]) -> Vec<&[u8]> {
    data.split(|&b| b == 0xff).collect()
}
