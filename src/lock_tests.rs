use super::*;

/// A clock for tests that moves only when told to.
#[derive(Debug, Default)]
pub struct FakeClock {
    now_us: std::cell::Cell<u64>,
    monotonic_ms: std::cell::Cell<u64>,
}

impl FakeClock {
    fn at_us(now_us: u64) -> Self {
        FakeClock {
            now_us: std::cell::Cell::new(now_us),
            monotonic_ms: std::cell::Cell::new(0),
        }
    }

    fn advance_ms(&self, ms: u64) {
        self.now_us.set(self.now_us.get() + ms * 1000);
        self.monotonic_ms.set(self.monotonic_ms.get() + ms);
    }

    /// Steps the wall clock only, like an NTP step; monotonic time does not move.
    fn set_us(&self, now_us: u64) {
        self.now_us.set(now_us);
    }
}

impl Clock for &FakeClock {
    fn now_us(&self) -> u64 {
        self.now_us.get()
    }

    fn monotonic_ms(&self) -> u64 {
        self.monotonic_ms.get()
    }
}

const FLOOR: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: true,
};
const NO_FLOOR: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: false,
};

fn held(owner: &[u8], token: u64, holds: u16) -> Option<Held<'_>> {
    Some(Held {
        owner,
        token,
        holds,
    })
}

#[test]
fn free_lock_is_granted_with_increasing_tokens() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.acquire(None, b"a", false, &NO_FLOOR),
        Acquire::Granted { token: 1 }
    );
    assert_eq!(
        node.acquire(None, b"b", false, &NO_FLOOR),
        Acquire::Granted { token: 2 }
    );
    assert_eq!(node.counter(), 2);
}

#[test]
fn clock_floor_lifts_tokens_to_wall_clock_micros() {
    let clock = FakeClock::at_us(5_000_000);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.acquire(None, b"a", false, &FLOOR),
        Acquire::Granted { token: 5_000_000 }
    );
    // Same microsecond: still strictly increasing.
    assert_eq!(
        node.acquire(None, b"b", false, &FLOOR),
        Acquire::Granted { token: 5_000_001 }
    );
}

#[test]
fn clock_running_backwards_never_lowers_tokens() {
    let clock = FakeClock::at_us(9_000_000);
    let mut node = Node::new(&clock);
    node.acquire(None, b"a", false, &FLOOR);
    clock.set_us(1_000_000);
    assert_eq!(
        node.acquire(None, b"b", false, &FLOOR),
        Acquire::Granted { token: 9_000_001 }
    );
}

#[test]
fn a_node_that_lost_its_counter_still_issues_larger_tokens_with_the_floor() {
    let clock = FakeClock::at_us(1_000_000);
    let mut before = Node::new(&clock);
    let Acquire::Granted { token: old } = before.acquire(None, b"a", false, &FLOOR) else {
        panic!("expected a grant")
    };
    clock.advance_ms(1);
    let mut restarted = Node::new(&clock);
    let Acquire::Granted { token: new } = restarted.acquire(None, b"b", false, &FLOOR) else {
        panic!("expected a grant")
    };
    assert!(new > old, "{new} <= {old}");
}

#[test]
fn same_owner_renews_with_same_token_and_holds() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.acquire(held(b"a", 7, 2), b"a", false, &FLOOR),
        Acquire::Renewed { token: 7, holds: 2 }
    );
    assert_eq!(node.counter(), 0, "renewal issues no token");
}

#[test]
fn reentrant_renewal_counts_holds_up_to_the_limit() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.acquire(held(b"a", 7, 1), b"a", true, &FLOOR),
        Acquire::Renewed { token: 7, holds: 2 }
    );
    assert_eq!(
        node.acquire(held(b"a", 7, MAX_HOLDS), b"a", true, &FLOOR),
        Acquire::HoldLimit
    );
}

#[test]
fn other_owner_is_contended() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.acquire(held(b"a", 7, 1), b"b", false, &FLOOR),
        Acquire::Contended
    );
    assert_eq!(
        node.acquire(held(b"a", 7, 1), b"ab", true, &FLOOR),
        Acquire::Contended
    );
}

#[test]
fn quarantine_refuses_free_locks_until_it_ends() {
    let clock = FakeClock::at_us(1_000_000);
    let mut node = Node::new(&clock);
    let settings = Settings {
        quarantine_ms: 500,
        clock_floor: false,
    };
    clock.advance_ms(200);
    assert_eq!(
        node.acquire(None, b"a", false, &settings),
        Acquire::Quarantined { ms_left: 300 }
    );
    // A lock it still holds (loaded from disk) is renewed, not refused.
    assert_eq!(
        node.acquire(held(b"a", 3, 1), b"a", false, &settings),
        Acquire::Renewed { token: 3, holds: 1 }
    );
    clock.advance_ms(300);
    assert_eq!(node.quarantine_left_ms(&settings), 0);
    assert_eq!(
        node.acquire(None, b"a", false, &settings),
        Acquire::Granted { token: 1 }
    );
}

#[test]
fn wall_clock_steps_neither_extend_nor_shorten_the_quarantine() {
    let clock = FakeClock::at_us(50_000_000);
    let mut node = Node::new(&clock);
    let settings = Settings {
        quarantine_ms: 1_000,
        clock_floor: true,
    };
    clock.set_us(10_000_000); // stepped back 40 s
    assert_eq!(node.quarantine_left_ms(&settings), 1_000);
    clock.set_us(90_000_000); // stepped forward 80 s
    assert_eq!(node.quarantine_left_ms(&settings), 1_000);
    clock.advance_ms(1_000);
    assert!(matches!(
        node.acquire(None, b"a", false, &settings),
        Acquire::Granted { .. }
    ));
}

#[test]
fn release_decrements_then_removes_and_ignores_others() {
    assert_eq!(release(None, b"a"), Release::NotHeld);
    assert_eq!(release(held(b"a", 1, 1), b"b"), Release::NotHeld);
    assert_eq!(
        release(held(b"a", 1, 3), b"a"),
        Release::Decremented { holds: 2 }
    );
    assert_eq!(release(held(b"a", 1, 1), b"a"), Release::Removed);
}

#[test]
fn extend_only_by_the_holder_and_never_when_free() {
    assert!(may_extend(held(b"a", 1, 1), b"a"));
    assert!(!may_extend(held(b"a", 1, 1), b"b"));
    assert!(!may_extend(None, b"a"));
}

#[test]
fn fence_raises_counter_only_for_the_holder() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(node.fence(held(b"a", 1, 1), b"b", 50), Fence::NotHeld);
    assert_eq!(node.fence(None, b"a", 50), Fence::NotHeld);
    assert_eq!(node.counter(), 0);
    assert_eq!(
        node.fence(held(b"a", 1, 1), b"a", 50),
        Fence::Fenced { token: 50 }
    );
    assert_eq!(node.counter(), 50);
    // Fencing below the counter keeps the counter (it never goes down).
    node.fence(held(b"a", 50, 1), b"a", 10);
    assert_eq!(node.counter(), 50);
    assert_eq!(
        node.acquire(None, b"c", false, &NO_FLOOR),
        Acquire::Granted { token: 51 }
    );
}

#[test]
fn quorum_fencing_example_from_protocol_md() {
    // A at 10, B and C at 5. Client 1 wins {A,B} and fences T=11 on both; client 2 later wins
    // {B,C}: B's counter was raised, so client 2's max is above 11.
    let clock = FakeClock::at_us(0);
    let (mut a, mut b, mut c) = (Node::new(&clock), Node::new(&clock), Node::new(&clock));
    a.raise_counter(10);
    b.raise_counter(5);
    c.raise_counter(5);
    let grant = |n: &mut Node<&FakeClock>| match n.acquire(None, b"x", false, &NO_FLOOR) {
        Acquire::Granted { token } => token,
        other => panic!("{other:?}"),
    };
    let t1 = grant(&mut a).max(grant(&mut b));
    assert_eq!(t1, 11);
    b.fence(held(b"x", 6, 1), b"x", t1);
    let t2 = grant(&mut b).max(grant(&mut c));
    assert!(t2 > t1, "{t2} <= {t1}");
}
