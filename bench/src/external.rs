//! node-redlock, pottery, python-redis-lock, redsync's algorithm, Redisson's locks and dlock's own Python (python/), Node (node/), Go (go/) and Java (java/) clients, driven
//! through the harness scripts in bench/harness/. Each run is one process that measures itself
//! and prints one JSON line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// dlock's Python client (python/, installed into bench/.venv by bench/run.sh).
pub const PYTHON_CLIENT: &str = "dlock (python)";
/// dlock's Node client (node/, built into node/dist by bench/run.sh).
pub const NODE_CLIENT: &str = "dlock (node)";
/// dlock's Go client (go/), and redsync's algorithm beside it, both in the Go harness
/// (bench/harness/go, built into target/go/bench-go by bench/run.sh).
pub const GO_CLIENT: &str = "dlock (go)";
pub const REDSYNC: &str = "redsync";
/// dlock's Java client (java/), and Redisson 3.52.0's locks beside it, all in the Java harness
/// (bench/java, built by bench/run.sh or `make bench-java`; docs/bench/java.md). Redisson's lock
/// lives on one Redis: on the five masters it is given the first.
pub const JAVA_CLIENT: &str = "dlock (java)";
pub const JAVA_TOKEN_USED: &str = "dlock (java, token used)";
pub const REDISSON_LOCK: &str = "Redisson RLock (1 master)";
pub const REDISSON_FAIR: &str = "Redisson fair lock (1 master)";
pub const REDISSON_FENCED: &str = "Redisson RFencedLock (1 master)";

/// An installed external contender.
#[derive(Clone, Debug)]
pub struct External {
    pub name: &'static str,
    program: PathBuf,
    script: PathBuf,
    /// A single-node lock (no quorum): measured only where the scenario runs on one node.
    pub single_node_only: bool,
    /// The Java harness: measures the holder-dies scenario (`dies`), not `extend`.
    pub java: bool,
}

fn harness_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("harness")
}

/// The external contenders whose dependencies bench/run.sh managed to install.
pub fn available() -> Vec<External> {
    let mut found = others();
    found.extend(java());
    found
}

/// The Java harness's contenders (bench/java/run.sh), those built.
pub fn java() -> Vec<External> {
    let java = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
    let classes = java.join("target/classes/dev/dlock/bench");
    let mut found = Vec::new();
    if !classes.join("Main.class").exists() {
        eprintln!("bench: the Java harness is not built (no JDK or Maven?): Redisson and {JAVA_CLIENT} skipped");
        return found;
    }
    let mut subjects = vec![];
    if classes.join("DlockSubject.class").exists() {
        subjects.extend([(JAVA_CLIENT, "dlock"), (JAVA_TOKEN_USED, "dlock-token")]);
    } else {
        eprintln!("bench: {JAVA_CLIENT} not built (java/ has no LockManager yet): skipped");
    }
    subjects.extend([
        (REDISSON_LOCK, "rlock"),
        (REDISSON_FAIR, "fair"),
        (REDISSON_FENCED, "fenced"),
    ]);
    for (name, subject) in subjects {
        // The harness takes the subject's name where the others take their script.
        found.push(External {
            name,
            program: java.join("run.sh"),
            script: subject.into(),
            single_node_only: false,
            java: true,
        });
    }
    found
}

fn others() -> Vec<External> {
    let dir = harness_dir();
    let mut found = Vec::new();
    if dir.join("node_modules/redlock").exists() {
        found.push(External {
            name: "node-redlock",
            program: "node".into(),
            script: dir.join("redlock.mjs"),
            single_node_only: false,
            java: false,
        });
    } else {
        eprintln!("bench: node-redlock not installed (npm unreachable?): skipped");
    }
    let node_client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../node/dist/esm/index.js");
    if node_client.exists() {
        found.push(External {
            name: NODE_CLIENT,
            program: "node".into(),
            script: dir.join("dlock_node.mjs"),
            single_node_only: false,
            java: false,
        });
    } else {
        eprintln!("bench: {NODE_CLIENT} not built (npm unreachable?): skipped");
    }
    let go_harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/go/bench-go");
    if go_harness.exists() {
        // The harness takes the contender's name where the others take their script.
        for (name, client) in [(GO_CLIENT, "dlock"), (REDSYNC, "redsync")] {
            found.push(External {
                name,
                program: go_harness.clone(),
                script: client.into(),
                single_node_only: false,
                java: false,
            });
        }
    } else {
        eprintln!("bench: {GO_CLIENT} and {REDSYNC} not built (no Go?): skipped");
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv");
    let python = venv.join("bin/python");
    for (name, module, script, single_node_only) in [
        ("pottery", "pottery", "pottery_bench.py", false),
        ("python-redis-lock", "redis_lock", "prl_bench.py", true),
        (PYTHON_CLIENT, "dlock", "dlock_py_bench.py", false),
    ] {
        if python.exists() && venv_has(&venv, module) {
            found.push(External {
                name,
                program: python.clone(),
                script: dir.join(script),
                single_node_only,
                java: false,
            });
        } else {
            eprintln!("bench: {name} not installed (PyPI unreachable?): skipped");
        }
    }
    found
}

/// Whether the venv's site-packages holds the package `module`.
fn venv_has(venv: &Path, module: &str) -> bool {
    let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
        return false;
    };
    libs.flatten()
        .any(|python| python.path().join("site-packages").join(module).exists())
}

/// What one harness run reports.
#[derive(Debug, Default)]
pub struct Measured {
    pub latencies_us: Vec<f64>,
    pub ops: f64,
    pub seconds: f64,
}

impl External {
    /// Whether this contender can run against `nodes`.
    pub fn supports(&self, nodes: &[String]) -> bool {
        !self.single_node_only || nodes.len() == 1
    }

    /// Whether this contender measures `scenario`: the Java harness has `dies` and no `extend`.
    pub fn measures(&self, scenario: &str) -> bool {
        match scenario {
            "extend" => !self.java,
            "dies" => self.java,
            _ => true,
        }
    }

    /// Runs `scenario` (`latency`, `throughput`, `contention`, `extend` or `dies`) against `nodes`.
    pub fn run(
        &self,
        nodes: &[String],
        scenario: &str,
        n: usize,
        concurrency: usize,
        duration_ms: u64,
        prefix: &str,
    ) -> Result<Measured, String> {
        let out = Command::new(&self.program)
            .arg(&self.script)
            .args(["--nodes", &nodes.join(","), "--scenario", scenario])
            .args([
                "--n",
                &n.to_string(),
                "--concurrency",
                &concurrency.to_string(),
            ])
            .args([
                "--duration-ms",
                &duration_ms.to_string(),
                "--prefix",
                prefix,
            ])
            .output()
            .map_err(|e| format!("{}: {e}", self.name))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        parse(&String::from_utf8_lossy(&out.stdout))
            .ok_or_else(|| format!("{}: unreadable output", self.name))
    }
}

/// Reads `{"latencies_us":[..]}`, `{"ops":n,"seconds":s}`, or both (contention).
fn parse(line: &str) -> Option<Measured> {
    let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let number = |name: &str| value.get(name).and_then(|v| v.as_f64());
    let latencies = value.get("latencies_us").and_then(|v| v.as_array());
    let measured = Measured {
        latencies_us: latencies
            .map_or_else(Vec::new, |l| l.iter().filter_map(|v| v.as_f64()).collect()),
        ops: number("ops").unwrap_or(0.0),
        seconds: number("seconds").unwrap_or(0.0),
    };
    (latencies.is_some() || measured.seconds > 0.0).then_some(measured)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_both_result_shapes() {
        let l = super::parse("{\"latencies_us\": [5, 7,9]}").unwrap();
        assert_eq!(l.latencies_us, vec![5.0, 7.0, 9.0]);
        let t = super::parse("{\"ops\": 300, \"seconds\": 1.5}").unwrap();
        assert_eq!((t.ops, t.seconds), (300.0, 1.5));
    }

    #[test]
    fn single_node_contenders_run_only_on_one_node() {
        let mut ext = super::External {
            name: "x",
            program: "p".into(),
            script: "s".into(),
            single_node_only: true,
            java: false,
        };
        let (one, five) = (vec!["a".to_string()], vec!["a".to_string(); 5]);
        assert!(ext.supports(&one) && !ext.supports(&five));
        ext.single_node_only = false;
        assert!(ext.supports(&one) && ext.supports(&five));
    }
}
