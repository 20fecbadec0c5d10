//! The module's integration tests against real redis-server processes, one test binary with a
//! module per file: a binary per file compiled the helpers and linked them once for each (most of
//! a minute of CI). `cargo test --test integration restore::` runs one file's tests.

mod common;

mod architecture;
mod bad_input;
mod cluster;
mod command_fuzz;
mod commands;
mod config;
mod eviction;
mod fixtures_load;
mod fixtures_newer;
mod flushes;
mod gates;
mod guard;
mod holders_at_scale;
mod key_ttl;
mod keyspace;
mod matrix;
mod metadata;
mod observe;
mod observe_more;
mod owner_storage;
mod pause;
mod persistence;
mod proclaim;
mod replication;
mod restore;
mod restore_fuzz;
mod run_id;
mod sets;
mod shared;
mod shared_durability;
mod slot_migration;
mod status;
mod tokens;
mod top;
mod versions;
mod waiting;
