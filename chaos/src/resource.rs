//! The protected resource: every worker writes to it inside its critical section, carrying its
//! fencing token. It keeps its own clock, records every access, and applies the fencing check:
//! a write whose token is lower than the highest it has accepted is rejected.

use std::sync::Mutex;
use std::time::Instant;

/// One critical section as the resource saw it.
#[derive(Debug, Clone)]
pub struct Section {
    pub token: u64,
    /// When the client finished acquiring (orders grants for the token-order check).
    pub granted_at: Instant,
    /// First and last write, by the resource's clock.
    pub start: Instant,
    pub end: Instant,
}

/// One write as the resource saw it, in arrival order.
#[derive(Debug, Clone, Copy)]
pub struct Write {
    pub token: u64,
    pub accepted: bool,
}

#[derive(Default)]
struct State {
    highest: u64,
    writes: Vec<Write>,
    sections: Vec<Section>,
}

#[derive(Default)]
pub struct Resource {
    state: Mutex<State>,
}

impl Resource {
    /// Applies one write with the fencing check; true if accepted.
    pub fn write(&self, token: u64) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let accepted = token >= state.highest;
        if accepted {
            state.highest = token;
        }
        state.writes.push(Write { token, accepted });
        accepted
    }

    /// Records a finished critical section.
    pub fn record(&self, section: Section) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.sections.push(section);
    }

    pub fn now(&self) -> Instant {
        Instant::now()
    }

    pub fn take(&self) -> (Vec<Section>, Vec<Write>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (
            std::mem::take(&mut state.sections),
            std::mem::take(&mut state.writes),
        )
    }
}
