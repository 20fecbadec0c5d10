//! What the clients do: the lock scenarios' worker tasks (workers.rs) and scenario 11's holder
//! processes (holder.rs), on the runtime and lock manager they share (connect.rs).

pub mod connect;
pub mod holder;
pub mod workers;
