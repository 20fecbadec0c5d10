//! How a resource lives in the keyspace, in one of two storage forms: one exclusive holder in a
//! compact value ([`compact`], owners packed by [`owner`]) or a table of holders ([`table`]).
//! [`key`] is the open key that reads either as a [`view::View`] and writes them; [`codec`] their
//! RDB encodings; [`types`] and [`callbacks`] the two data types' callbacks, plus the node
//! counter as RDB aux data; [`values`] the value in an open key. [`unlink`] hears a value leave
//! its key (DEL, expiry, RENAME, MOVE...) and [`moves`] SWAPDB: a moved resource is never held
//! again; [`ttl`] is the rule that a lock key expires with its lock, applied by [`arrivals`]
//! after a RESTORE or a load and by [`sweep`] after PERSIST or EXPIRE by hand; [`notify`] tells
//! Redis a lock key changed (WATCH, keyspace events, `DLOCK.OBSERVE`'s blocked clients, with
//! [`observers`] where a deleted key wakes no one). None of it subscribes to keyspace
//! events: other keys' commands pay nothing for the module.

pub mod arrivals;
pub mod callbacks;
pub mod codec;
pub mod compact;
pub mod edit;
pub mod fields;
pub mod form;
pub mod gate;
pub mod gate_codec;
pub mod gate_watch;
pub mod ghosts;
pub mod holder;
pub mod key;
pub mod moves;
pub mod notify;
pub mod observers;
pub mod owner;
pub mod places;
pub mod rdb;
pub mod refusals;
pub mod sweep;
pub mod table;
pub mod ttl;
pub mod types;
pub mod unlink;
pub mod values;
pub mod view;

pub use holder::{Lease, Slot};
pub use key::LockKey;

/// Creates the module's data types — a resource's two storage forms and the gate — first thing
/// at load, before anything can store a value: the layers above never name a form.
pub fn create_types(ctx: &redis_module::Context) -> Result<(), &'static str> {
    for data_type in [&types::LOCK_TYPE, &types::TABLE_TYPE, &gate::GATE_TYPE] {
        data_type
            .create_data_type(ctx.ctx)
            .map_err(|_| "a data type could not be created")?;
    }
    Ok(())
}
