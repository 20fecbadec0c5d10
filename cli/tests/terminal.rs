//! `dlock run` as the foreground job of an interactive shell: its command runs in a process group
//! of its own (so that it cannot outlive dlock: tests/supervisor.rs), which is handed the
//! terminal, so the command reads it and gets Ctrl-C as if the shell ran it, and Ctrl-Z stops the
//! job (dlock follows its command into the stop) until `fg`.

mod common;
use common::*;

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{signal, SigHandler, Signal};

/// An interactive bash on a new pseudo-terminal, and everything it printed so far.
struct Shell {
    master: std::fs::File,
    printed: Arc<Mutex<String>>,
    bash: std::process::Child,
}

impl Shell {
    fn start(servers: &[Server]) -> Shell {
        let pty = nix::pty::openpty(None, None).unwrap();
        let slave: OwnedFd = pty.slave;
        let mut command = Command::new("bash");
        command
            .args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("DLOCK_NODES", urls(servers).join(","))
            .env("DLOCK_TIMEOUT", PATIENT)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: runs in the forked child before exec; setsid, ioctl and sigaction are
        // async-signal-safe system calls. TIOCSCTTY makes the pty (its standard input by now)
        // the controlling terminal of the new session, as a terminal emulator does for its
        // shell; SIGINT and SIGTERM start at their defaults whatever this test inherited (an
        // ignored one would stay ignored by everything the shell runs).
        unsafe {
            command.pre_exec(|| {
                for which in [Signal::SIGINT, Signal::SIGTERM] {
                    signal(which, SigHandler::SigDfl)?;
                }
                nix::unistd::setsid()?;
                if nix::libc::ioctl(0, nix::libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let bash = command.spawn().unwrap();
        let master = std::fs::File::from(pty.master);
        let printed = Arc::new(Mutex::new(String::new()));
        let (mut reader, sink) = (master.try_clone().unwrap(), printed.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                let text = String::from_utf8_lossy(&buffer[..n]).into_owned();
                sink.lock().unwrap().push_str(&text);
            }
        });
        Shell {
            master,
            printed,
            bash,
        }
    }

    fn type_in(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits until the shell printed `text` (after what earlier expectations consumed).
    fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            {
                let mut printed = self.printed.lock().unwrap();
                if let Some(at) = printed.find(text) {
                    printed.drain(..at + text.len());
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "never printed {text:?}: {printed:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.bash.kill();
        let _ = self.bash.wait();
    }
}

#[test]
fn a_foreground_run_reads_the_terminal_and_follows_ctrl_c_and_ctrl_z() {
    let servers = nodes(1);
    let mut shell = Shell::start(&servers);
    let dlock = env!("CARGO_BIN_EXE_dlock");
    shell.type_in(&format!(
        "{dlock} run job -- sh -c 'read x; echo got-$x'; echo rc=$?\n"
    ));
    std::thread::sleep(Duration::from_millis(500));
    shell.type_in("hello\n");
    shell.expect("got-hello");
    shell.expect("rc=0");

    shell.type_in(&format!("{dlock} run job -- sleep 30; echo rc=$?\n"));
    std::thread::sleep(Duration::from_millis(500));
    shell.type_in("\u{1a}"); // Ctrl-Z
    shell.expect("Stopped");
    assert!(token_on(&servers[0], "job").is_some(), "held while stopped");
    shell.type_in("fg\n");
    std::thread::sleep(Duration::from_millis(500));
    shell.type_in("\u{3}"); // Ctrl-C
    shell.type_in("echo after=$?\n");
    shell.expect("after=130");
    let deadline = Instant::now() + Duration::from_secs(5);
    while token_on(&servers[0], "job").is_some() {
        assert!(Instant::now() < deadline, "not released after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    }
}
