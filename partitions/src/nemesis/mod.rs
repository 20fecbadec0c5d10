//! The nemesis: the faults a schedule is made of (fault.rs), how each is applied, held and
//! healed (apply.rs), and the process that delays packets where the kernel has no netem
//! (delayer.rs). It acts on the topology; nothing below it knows it.

pub mod apply;
pub mod delayer;
pub mod fault;
