//! The module's `src/wire/` parsers, from their own files.

#[path = "../../../src/wire/args.rs"]
pub mod args;
#[path = "../../../src/wire/errors.rs"]
pub mod errors;
#[path = "../../../src/wire/limits.rs"]
pub mod limits;
#[path = "../../../src/wire/requests.rs"]
pub mod requests;
