//! The clock shim as the suite builds it (topology/clock.rs): a process started with it sees its
//! wall clock moved by the offset in its file, and only runs whose schedule moves clocks use it.

use std::process::Command;
use std::time::Duration;

use dlock_partitions::nemesis::fault::{moves_clocks, Fault};
use dlock_partitions::topology::clock::{self, Shim};

/// `date +%s` under the shim, with `ms` in the offset file.
fn shifted_date(shim: &Shim, dir: &std::path::Path, ms: i64) -> i64 {
    clock::set(dir, ms).expect("write the offset");
    let out = Command::new("date")
        .arg("+%s")
        .env("LD_PRELOAD", shim.path())
        .env("CLOCKSHIFT_FILE", clock::file(dir))
        .output()
        .expect("run date");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("date printed seconds")
}

fn now_s() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.expect("clock after 1970").as_secs() as i64
}

#[test]
fn the_shim_moves_the_wall_clock_by_the_files_offset() {
    let shim = Shim::build().expect("cc compiles chaos/shim/clockshift.c");
    let dir = tempfile::tempdir().expect("temp dir");
    let ahead = shifted_date(&shim, dir.path(), 3_600_000) - now_s();
    assert!(
        (3_598..=3_602).contains(&ahead),
        "an hour ahead, got {ahead} s"
    );
    let behind = shifted_date(&shim, dir.path(), -3_600_000) - now_s();
    assert!(
        (-3_602..=-3_598).contains(&behind),
        "an hour behind, got {behind} s"
    );
    let healed = shifted_date(&shim, dir.path(), 0) - now_s();
    assert!(healed.abs() <= 2, "back to real time, got {healed} s");
}

#[test]
fn only_schedules_that_move_clocks_use_the_shim() {
    let hold = Duration::from_secs(1);
    let plain = vec![(Fault::PauseHolder, hold, None)];
    assert!(!moves_clocks(&plain));
    let offset = Fault::ClockOffset {
        nodes: vec![0],
        ms: 40,
    };
    assert!(moves_clocks(&[
        (Fault::PauseHolder, hold, None),
        (offset, hold, None)
    ]));
}
