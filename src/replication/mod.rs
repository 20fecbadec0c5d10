//! What leaves the node besides replies: the replicated *effects* of lock writes ([`effects`]),
//! the rule deciding whether anything can receive them ([`propagation`]), the counter written
//! after every fork ([`fork`]), and keyspace events and WATCH signals ([`notify`]).

pub mod effects;
pub mod fork;
pub mod notify;
pub mod propagation;
