//! The harness contenders of `make bench-multi`: node-redlock's array form
//! (bench/harness/redlock_multi.mjs) and redsync's algorithm per key (the Go harness's `multi`
//! scenario, bench/harness/go/multi.go), and Redisson 3.52.0's `RedissonMultiLock` (the Java
//! harness's `multi` scenario, bench/java). Each run is one process printing one JSON line.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::multi::{Record, Spec};

pub const NODE_REDLOCK: &str = "node-redlock, array form";
pub const REDSYNC: &str = "redsync, per key in the worker's order";
pub const REDISSON: &str = "Redisson MultiLock (`lock()`)";

/// A harness contender whose dependencies are installed.
pub struct Harness {
    pub name: &'static str,
    program: PathBuf,
    args: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The harnesses installed (bench/run.sh, or the `bench-multi` target, installs them); a
/// missing one is named on stderr and skipped.
pub fn available() -> Vec<Harness> {
    let mut found = Vec::new();
    let harness = root().join("bench/harness");
    if harness.join("node_modules/redlock").exists() {
        found.push(Harness {
            name: NODE_REDLOCK,
            program: "node".into(),
            args: vec![harness.join("redlock_multi.mjs").display().to_string()],
        });
    } else {
        eprintln!("bench-multi: node-redlock not installed (npm unreachable?): skipped");
    }
    let go = root().join("target/go/bench-go");
    if go.exists() {
        found.push(Harness {
            name: REDSYNC,
            program: go,
            args: vec!["redsync".into(), "--scenario".into(), "multi".into()],
        });
    } else {
        eprintln!("bench-multi: the Go harness is not built (no Go?): redsync skipped");
    }
    let java = root().join("bench/java");
    if java
        .join("target/classes/dev/dlock/bench/Main.class")
        .exists()
    {
        found.push(Harness {
            name: REDISSON,
            program: java.join("run.sh"),
            args: vec!["rlock".into(), "--scenario".into(), "multi".into()],
        });
    } else {
        eprintln!(
            "bench-multi: the Java harness is not built (no JDK or Maven?): Redisson skipped"
        );
    }
    found
}

impl Harness {
    /// Runs `spec` against `nodes` (`cluster`: one node URL of a Redis Cluster).
    pub fn run(
        &self,
        nodes: &[String],
        cluster: bool,
        spec: &Spec,
        prefix: &str,
    ) -> Result<Record, String> {
        let ms = |d: std::time::Duration| d.as_millis().to_string();
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(["--nodes", &nodes.join(",")])
            .args(["--concurrency", &spec.workers.to_string()])
            .args(["--k", &spec.k.to_string(), "--hold-ms", &ms(spec.hold)])
            .args([
                "--ttl-ms",
                &ms(spec.ttl),
                "--duration-ms",
                &ms(spec.duration),
            ])
            .args(["--prefix", prefix]);
        if cluster {
            command.args(["--cluster", "1"]);
        }
        let out = command
            .output()
            .map_err(|e| format!("{}: {e}", self.name))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!("{} failed: {stderr}", self.name));
        }
        Record::parse(&String::from_utf8_lossy(&out.stdout))
            .ok_or_else(|| format!("{}: unreadable output", self.name))
    }

    /// Whether this harness can run on a Redis Cluster (the Go harness has no Cluster client).
    pub fn runs_on_cluster(&self) -> bool {
        self.name == NODE_REDLOCK || self.name == REDISSON
    }

    /// Why this harness is not run across independent masters, if it is not: Redisson's lock
    /// lives on one Redis (or one Cluster).
    pub fn single_master(&self) -> Option<&'static str> {
        (self.name == REDISSON).then_some(
            "not run: Redisson's lock lives on one Redis (its RedLock over independent masters is deprecated)",
        )
    }
}
