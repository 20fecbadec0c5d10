//! Jepsen's method for dlock (the `dlock-partitions` binary, `make partitions`): hosts and a
//! network made of namespaces, a nemesis, client processes recording a history, and the
//! checkers. A library so that its tests (tests/cleanup.rs) drive the same network code.
//!
//! By concern, lowest first (each uses only those before it; tests/architecture.rs checks):
//! `names` and `history` (what every part agrees on), `checkers` (the history judged),
//! `topology` (hosts, nodes, deployments), `nemesis` (faults played on them), `workloads` and
//! `worker` (the client processes), `run` (one run played), `runs` (the catalogue),
//! `report` (what a run leaves).

pub mod checkers;
pub mod history;
pub mod names;
pub mod nemesis;
pub mod report;
pub mod run;
pub mod runs;
pub mod topology;
pub mod worker;
pub mod workloads;
