use super::*;
use crate::testing::FakeClock;

const FLOOR: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: true,
};
const NO_FLOOR: Settings = Settings {
    quarantine_ms: 0,
    clock_floor: false,
};

fn held(owner: &[u8], token: u64) -> Option<Holder<'_>> {
    Some(Holder {
        owner,
        mode: crate::Mode::Exclusive,
        token,
        holds: 1,
        deadline_ms: u64::MAX,
    })
}

#[test]
fn grants_issue_strictly_increasing_tokens() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(node.grant(&NO_FLOOR), Ok(1));
    assert_eq!(node.grant(&NO_FLOOR), Ok(2));
    assert_eq!(node.counter(), 2);
}

#[test]
fn clock_floor_lifts_tokens_to_wall_clock_micros() {
    let clock = FakeClock::at_us(5_000_000);
    let mut node = Node::new(&clock);
    assert_eq!(node.grant(&FLOOR), Ok(5_000_000));
    assert_eq!(node.grant(&FLOOR), Ok(5_000_001), "same microsecond");
    clock.advance_ms(1);
    assert_eq!(node.grant(&FLOOR), Ok(5_001_000));
}

#[test]
fn clock_running_backwards_never_lowers_tokens() {
    let clock = FakeClock::at_us(9_000_000);
    let mut node = Node::new(&clock);
    assert_eq!(node.grant(&FLOOR), Ok(9_000_000));
    clock.set_us(1_000_000);
    assert_eq!(node.grant(&FLOOR), Ok(9_000_001));
}

#[test]
fn a_node_that_lost_its_counter_still_issues_larger_tokens_with_the_floor() {
    let clock = FakeClock::at_us(7_000_000);
    let before = Node::new(&clock).grant(&FLOOR).unwrap();
    clock.advance_ms(5);
    let mut restarted = Node::new(&clock); // counter 0: lost
    assert!(restarted.grant(&FLOOR).unwrap() > before);
}

#[test]
fn quarantine_refuses_grants_until_it_ends() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    let settings = Settings {
        quarantine_ms: 1_000,
        clock_floor: false,
    };
    assert_eq!(
        node.grant(&settings),
        Err(GrantRefused::Quarantined { ms_left: 1_000 })
    );
    clock.advance_ms(999);
    assert_eq!(
        node.grant(&settings),
        Err(GrantRefused::Quarantined { ms_left: 1 })
    );
    assert_eq!(node.counter(), 0, "refusals issue nothing");
    clock.advance_ms(1);
    assert_eq!(node.grant(&settings), Ok(1));
}

#[test]
fn wall_clock_steps_neither_extend_nor_shorten_the_quarantine() {
    let clock = FakeClock::at_us(1_000_000_000);
    let node = Node::new(&clock);
    let settings = Settings {
        quarantine_ms: 500,
        clock_floor: true,
    };
    clock.set_us(1_000_000_000 + 3_600_000_000); // an hour forward
    assert_eq!(node.quarantine_left_ms(&settings), 500);
    clock.set_us(1); // far backwards
    assert_eq!(node.quarantine_left_ms(&settings), 500);
    clock.advance_ms(500);
    assert_eq!(node.quarantine_left_ms(&settings), 0);
}

#[test]
fn a_quarantine_over_stays_over_but_a_longer_one_is_measured_again() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    let short = Settings {
        quarantine_ms: 10,
        clock_floor: false,
    };
    clock.advance_ms(10);
    assert_eq!(node.grant(&short), Ok(1));
    let long = Settings {
        quarantine_ms: 50,
        ..short
    };
    assert_eq!(
        node.grant(&long),
        Err(GrantRefused::Quarantined { ms_left: 40 }),
        "raised after the short one ended"
    );
    clock.advance_ms(40);
    assert_eq!(node.grant(&long), Ok(2));
    assert_eq!(node.grant(&short), Ok(3));
}

#[test]
fn grant_at_floors_tokens_to_the_reading_it_is_given() {
    let clock = FakeClock::at_us(1_000_000);
    let mut node = Node::new(&clock);
    assert_eq!(node.grant_at(&FLOOR, 3_000_000), Ok(3_000_000));
    assert_eq!(node.grant_at(&FLOOR, 2_000_000), Ok(3_000_001));
    assert_eq!(node.grant_at(&NO_FLOOR, 9_000_000), Ok(3_000_002));
    assert_eq!(deadline_at(5_000, 250), 5_250);
    assert_eq!(deadline_at(u64::MAX - 1, 250), u64::MAX);
}

#[test]
fn an_exhausted_counter_refuses_grants_instead_of_wrapping() {
    let clock = FakeClock::at_us(1_000);
    let mut node = Node::new(&clock);
    node.raise_counter(MAX_TOKEN - 1);
    assert_eq!(node.grant(&FLOOR), Ok(MAX_TOKEN));
    assert_eq!(node.grant(&FLOOR), Err(GrantRefused::Exhausted));
    assert_eq!(node.grant(&NO_FLOOR), Err(GrantRefused::Exhausted));
    assert_eq!(node.counter(), MAX_TOKEN);
}

#[test]
fn raise_never_lowers_and_never_passes_the_maximum() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    node.raise_counter(50);
    node.raise_counter(10);
    assert_eq!(node.counter(), 50);
    node.raise_counter(u64::MAX);
    assert_eq!(node.counter(), MAX_TOKEN);
}

#[test]
fn client_tokens_may_lead_the_wall_clock_by_a_year_at_most() {
    let clock = FakeClock::at_us(1_000_000);
    let node = Node::new(&clock);
    let limit = 1_000_000 + MAX_TOKEN_LEAD_US;
    assert_eq!(node.check_client_token(limit), Ok(limit));
    assert_eq!(
        node.check_client_token(limit + 1),
        Err(TokenRefused::TooFarAhead { limit })
    );
    clock.advance_ms(1);
    assert_eq!(
        node.check_client_token(limit + 1),
        Ok(limit + 1),
        "moves with the clock"
    );
}

#[test]
fn a_counter_already_past_the_lead_is_itself_the_limit() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    node.raise_counter(MAX_TOKEN - 5); // loaded from a trusted source
    assert_eq!(node.token_limit(), MAX_TOKEN - 5);
}

#[test]
fn fence_raises_the_counter_only_for_the_holder() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    assert_eq!(
        node.fence(held(b"a", 1), b"a", 100),
        Fence::Fenced { token: 100 }
    );
    assert_eq!(node.counter(), 100);
    assert_eq!(node.fence(held(b"a", 1), b"b", 500), Fence::NotHeld);
    assert_eq!(node.fence(None, b"a", 500), Fence::NotHeld);
    assert_eq!(node.counter(), 100);
}

#[test]
fn fence_never_lowers_a_token_or_the_counter() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    node.raise_counter(1_000);
    assert_eq!(
        node.fence(held(b"a", 1_000), b"a", 7),
        Fence::Lowers { current: 1_000 }
    );
    assert_eq!(
        node.fence(held(b"a", 1_000), b"a", 1_000),
        Fence::Fenced { token: 1_000 }
    );
    assert_eq!(node.counter(), 1_000);
}

#[test]
fn fence_refuses_a_token_too_far_ahead_even_when_not_held() {
    let clock = FakeClock::at_us(0);
    let mut node = Node::new(&clock);
    let limit = MAX_TOKEN_LEAD_US;
    for lock in [held(b"a", 1), None] {
        assert_eq!(
            node.fence(lock, b"a", MAX_TOKEN),
            Fence::TooFarAhead { limit }
        );
    }
    assert_eq!(node.counter(), 0);
}

#[test]
fn quorum_fencing_example() {
    // Node A at 10, B and C at 5. Client 1 is granted on A and B (tokens 11, 6) and commits
    // max = 11 on both. Client 2, later, is granted on B and C: B's counter was raised to 11,
    // so client 2's max token is above 11 although C alone would have said 6.
    let clock = FakeClock::at_us(0);
    let (mut a, mut b, mut c) = (Node::new(&clock), Node::new(&clock), Node::new(&clock));
    a.raise_counter(10);
    b.raise_counter(5);
    c.raise_counter(5);
    let t1 = a.grant(&NO_FLOOR).unwrap().max(b.grant(&NO_FLOOR).unwrap());
    assert_eq!(t1, 11);
    assert_eq!(
        a.fence(held(b"one", 11), b"one", t1),
        Fence::Fenced { token: 11 }
    );
    assert_eq!(
        b.fence(held(b"one", 6), b"one", t1),
        Fence::Fenced { token: 11 }
    );
    let t2 = b.grant(&NO_FLOOR).unwrap().max(c.grant(&NO_FLOOR).unwrap());
    assert!(t2 > t1, "{t2} > {t1}");
}

#[test]
fn deadlines_saturate() {
    let clock = FakeClock::at_us(u64::MAX);
    let node = Node::new(&clock);
    assert_eq!(node.deadline_ms(u64::MAX), u64::MAX);
}
