//! The module's pure encodings from `src/keyspace/`, from their own files.

#[path = "../../../src/keyspace/fields.rs"]
pub mod fields;
#[path = "../../../src/keyspace/gate_codec.rs"]
pub mod gate_codec;
