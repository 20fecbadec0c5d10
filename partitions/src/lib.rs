//! Jepsen's method for dlock (the `dlock-partitions` binary, `make partitions`): hosts and a
//! network made of namespaces, a nemesis, client processes recording a history, and the
//! checkers. A library so that its tests (tests/cleanup.rs) drive the same network code.

pub mod chart;
pub mod checker;
pub mod checker_election;
pub mod checker_shared;
pub mod clock;
pub mod delayer;
pub mod faults;
pub mod history;
pub mod linear;
pub mod net;
pub mod nodes;
pub mod report;
pub mod run;
pub mod runs;
pub mod runs_clock;
pub mod runs_election;
pub mod runs_shared;
pub mod topology;
pub mod topology_cluster;
pub mod worker;
pub mod worker_cli;
pub mod workload_election;
pub mod workload_shared;
