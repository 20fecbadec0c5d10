//! Wall-clock offsets for the nodes: the chaos suite's LD_PRELOAD shim
//! (`chaos/shim/clockshift.c`, one source for both suites), compiled with `cc` into the run's
//! temp dir. A shimmed node reads the offset in milliseconds from its own file every 10 ms and
//! adds it to `CLOCK_REALTIME`, `gettimeofday` and `time`; monotonic clocks are untouched (an
//! NTP step, not a slewed clock). The file lives in the node's data dir, so a node killed and
//! restarted keeps its shim and its current offset. Which runs need it is the schedule's to
//! say (nemesis/fault.rs, `moves_clocks`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shim's source: the chaos suite's, so a fix there is a fix here.
const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../chaos/shim/clockshift.c");

/// The offset file's name inside a node's data dir.
const FILE: &str = "clockshift";

/// The compiled shim; removed with its temp dir when the run ends.
pub struct Shim {
    dir: tempfile::TempDir,
}

impl Shim {
    /// Compiles the shim with `cc`; an error saying what is missing when it cannot.
    pub fn build() -> Result<Shim, String> {
        let dir = tempfile::Builder::new()
            .prefix("dlp-clock-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let out = dir.path().join("clockshift.so");
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&out)
            .arg(SOURCE)
            .output()
            .map_err(|e| format!("clock faults need a C compiler: cannot run cc ({e})"))?;
        if !built.status.success() {
            return Err(format!(
                "cc could not compile {SOURCE}:\n{}",
                String::from_utf8_lossy(&built.stderr)
            ));
        }
        Ok(Shim { dir })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("clockshift.so")
    }
}

/// A node's offset file, in its data dir (kept across kill -9 and restart).
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join(FILE)
}

/// Sets a node's wall clock to real time + `ms` (the shim sees it within 10 ms). Written to a
/// temporary name and renamed, so the shim never reads half a number.
pub fn set(data_dir: &Path, ms: i64) -> Result<(), String> {
    let tmp = data_dir.join(format!("{FILE}.tmp"));
    std::fs::write(&tmp, ms.to_string()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file(data_dir)).map_err(|e| format!("clock offset file: {e}"))
}
