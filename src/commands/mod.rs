//! The DLOCK.* commands. `table::COMMANDS` is the one place each command's facts live:
//! registration, arity checks, `COMMAND DOCS` / `COMMAND INFO` metadata, ACL categories and the
//! README's command reference are all derived from it ([`register`], and the README test).

mod acquire;
mod guard;
mod holders;
mod node;
mod observe;
mod register;
mod reply;
mod set_holds;
mod sets;
mod status;
mod table;
mod top;
mod wrapped;

pub use guard::revive as revive_gate;
pub use register::register;
