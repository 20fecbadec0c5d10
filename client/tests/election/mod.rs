//! Leader election against real nodes, a module of the client's test binary (docs/election.md): campaign, leader,
//! proclaim, resign, observe and the lease-loss contract on 1 and 5 masters (basics.rs), on a
//! Redis Cluster and a Sentinel master (nodes.rs), under faults (faults.rs).

mod basics;
mod faults;
mod nodes;
