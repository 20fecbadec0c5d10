//! A full-screen view redrawn every interval until q, Ctrl-C or SIGTERM (`dlock top`).
//!
//! Plain ANSI escapes and termios through nix, which dlock already uses for signals: the view
//! needs four escapes (alternate screen, cursor, clear, home) and one terminal mode (keys without
//! Enter, no echo), not worth a terminal crate and its dependencies.

use std::future::Future;
use std::io::Write;
use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

const ENTER: &str = "\x1b[?1049h\x1b[?25l"; // alternate screen, cursor hidden
const LEAVE: &str = "\x1b[?25h\x1b[?1049l";
const CLEAR: &str = "\x1b[H\x1b[2J";

/// Draws what `frame` returns, again every `interval` or at once on any key but q; returns on
/// q, Ctrl-C or SIGTERM, with the terminal as it was.
pub async fn live<F, Fut>(frame: F, interval: Duration) -> std::io::Result<()>
where
    F: Fn() -> Fut,
    Fut: Future<Output = String>,
{
    let _screen = Screen::enter()?;
    let (mut keys, mut typing) = (keys(), true);
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    loop {
        let text = frame().await;
        draw(&text)?;
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            key = keys.recv(), if typing => match key {
                Some(b'q' | b'Q') => return Ok(()),
                Some(_) => {}
                // End of input (stdin not a terminal): Ctrl-C still quits.
                None => typing = false,
            },
            _ = interrupt.recv() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
        }
    }
}

fn draw(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    write!(out, "{CLEAR}{text}")?;
    out.flush()
}

/// The terminal in the view's mode; restored on drop, whichever way the view ends.
struct Screen {
    saved: Option<Termios>,
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        let stdin = std::io::stdin();
        // Without a terminal on stdin (input redirected) q cannot be read: Ctrl-C still quits.
        let saved = termios::tcgetattr(stdin.as_fd()).ok();
        if let Some(saved) = &saved {
            let mut raw = saved.clone();
            // Keys arrive one by one, unechoed; ISIG stays, so Ctrl-C is still SIGINT.
            raw.local_flags
                .remove(LocalFlags::ICANON | LocalFlags::ECHO);
            raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
            raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
            termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw)?;
        }
        let mut out = std::io::stdout().lock();
        write!(out, "{ENTER}")?;
        out.flush()?;
        Ok(Screen { saved })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{LEAVE}");
        let _ = out.flush();
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, saved);
        }
    }
}

/// Bytes typed on stdin. A plain thread, not tokio's stdin: a read pending at exit would hold
/// up the runtime's shutdown; the thread just ends with the process.
fn keys() -> mpsc::Receiver<u8> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        use std::io::Read;
        let mut byte = [0u8; 1];
        let mut stdin = std::io::stdin().lock();
        while let Ok(1) = stdin.read(&mut byte) {
            if tx.blocking_send(byte[0]).is_err() {
                break;
            }
        }
    });
    rx
}
