//! What leaves the node besides replies: the replicated *effects* of lock writes ([`effects`]),
//! the rule deciding whether anything can receive them ([`propagation`]), and the counter written
//! after every fork ([`fork`]).

pub mod effects;
pub mod fork;
pub mod propagation;
