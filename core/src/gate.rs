//! A gate: the highest fencing token a piece of data has been written under, kept where the
//! data lives. A write passes only with a token at least the gate's, and raises the gate to it;
//! so once a newer holder wrote, an older one (paused past its lease, partitioned) cannot.
//!
//! Equal passes: one holder writes many times under its one token. Two holders never share a
//! token (quorum fencing orders exclusive holds by token), so equal is always the same hold.

/// Whether a write under `token` passes a gate standing at `gate` (`None`: no gate yet).
pub fn admits(gate: Option<u64>, token: u64) -> bool {
    gate.is_none_or(|standing| token >= standing)
}

/// Where the gate stands after a write under `token` passed it: never lower than before.
pub fn raised(gate: Option<u64>, token: u64) -> u64 {
    gate.map_or(token, |standing| standing.max(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_admits_its_own_token_and_higher_and_never_falls() {
        assert!(admits(None, 1));
        assert!(admits(Some(7), 7));
        assert!(admits(Some(7), 8));
        assert!(!admits(Some(7), 6));
        assert_eq!(raised(None, 5), 5);
        assert_eq!(raised(Some(7), 5), 7);
        assert_eq!(raised(Some(7), 9), 9);
    }
}
