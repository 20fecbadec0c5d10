//! The client processes the suite starts inside the clients' namespaces, apart from what they
//! do (workloads/): the Rust library's process (rust.rs), and the CLI's (cli.rs: a recorder that
//! starts `dlock run` for each critical section, and the section it runs). The Python library's
//! is ../worker.py.

pub mod cli;
pub mod rust;
