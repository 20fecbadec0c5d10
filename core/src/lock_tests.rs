use super::*;

fn held(owner: &[u8], token: u64, holds: u16) -> Option<Held<'_>> {
    Some(Held {
        owner,
        token,
        holds,
        deadline_ms: 1_000,
    })
}

#[test]
fn a_free_lock_is_granted() {
    assert_eq!(acquire(None, b"a", false), Acquire::Grant);
}

#[test]
fn same_owner_renews_with_same_token_and_holds() {
    assert_eq!(
        acquire(held(b"a", 7, 1), b"a", false),
        Acquire::Renew { token: 7, holds: 1 }
    );
    assert_eq!(
        acquire(held(b"a", 7, 3), b"a", false),
        Acquire::Renew { token: 7, holds: 3 }
    );
}

#[test]
fn reentrant_renewal_counts_holds_up_to_the_limit() {
    assert_eq!(
        acquire(held(b"a", 7, 1), b"a", true),
        Acquire::Renew { token: 7, holds: 2 }
    );
    assert_eq!(
        acquire(held(b"a", 7, MAX_HOLDS), b"a", true),
        Acquire::HoldLimit
    );
}

#[test]
fn another_owner_is_contended() {
    assert_eq!(acquire(held(b"a", 7, 1), b"b", false), Acquire::Contended);
    assert_eq!(acquire(held(b"a", 7, 1), b"b", true), Acquire::Contended);
    assert_eq!(acquire(held(b"a", 7, 1), b"a\0", false), Acquire::Contended);
}

#[test]
fn a_lock_is_live_strictly_before_its_deadline() {
    assert_eq!(live(held(b"a", 1, 1), 999), held(b"a", 1, 1));
    assert_eq!(live(held(b"a", 1, 1), 1_000), None);
    assert_eq!(live(None, 0), None);
}

#[test]
fn release_decrements_then_removes_and_ignores_others() {
    assert_eq!(
        release(held(b"a", 1, 2), b"a"),
        Release::Decremented { holds: 1 }
    );
    assert_eq!(release(held(b"a", 1, 1), b"a"), Release::Removed);
    assert_eq!(release(held(b"a", 1, 1), b"b"), Release::NotHeld);
    assert_eq!(release(None, b"a"), Release::NotHeld);
}

#[test]
fn extend_only_by_the_holder_and_never_when_free() {
    assert!(may_extend(held(b"a", 1, 1), b"a"));
    assert!(!may_extend(held(b"a", 1, 1), b"b"));
    assert!(!may_extend(None, b"a"));
}
