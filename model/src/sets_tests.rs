use dlock_core::Want;

use super::*;
use crate::config::Config;
use crate::system::State;

const W: Want = Want::Exclusive;

fn acquire(config: &Config, state: &mut State, client: usize) {
    let ticket = state.clients[client].ticket;
    let msg = Msg::Acquire {
        client,
        round: 0,
        ticket,
    };
    on_message(config, state, 0, msg);
}

fn release(config: &Config, state: &mut State, client: usize) {
    on_message(config, state, 0, Msg::Release { client, round: 0 });
}

/// Per key, who holds it (client numbers).
fn held(state: &State) -> Vec<Vec<u8>> {
    let keys = &state.nodes[0].keys;
    keys.iter()
        .map(|k| k.holders.iter().map(|h| h.owner[0]).collect())
        .collect()
}

#[test]
fn opposite_orders_queue_alike_and_the_first_set_is_served_when_b_frees() {
    let sets: [&[Member]; 3] = [&[(1, W)], &[(0, W), (1, W)], &[(1, W), (0, W)]];
    let config = Config::sets("t", 1, &sets, false);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    acquire(&config, &mut state, 1);
    acquire(&config, &mut state, 2);
    // The single holds b; both sets wait, holding nothing, and a stays idle for the first.
    assert_eq!(held(&state), vec![vec![], vec![0]]);
    canonicalize(&mut state.nodes[0]);
    assert_eq!(state.nodes[0].arrivals, 2);
    release(&config, &mut state, 0);
    assert_eq!(held(&state), vec![vec![1], vec![1]]);
    release(&config, &mut state, 1);
    assert_eq!(held(&state), vec![vec![2], vec![2]]);
    assert!(!state.ghost.set_overtaken);
}

#[test]
fn a_wound_revokes_the_whole_tentative_set() {
    let sets: [&[Member]; 2] = [&[(0, W), (1, W)], &[(0, W)]];
    let config = Config::sets("t", 3, &sets, true);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    assert_eq!(held(&state), vec![vec![0], vec![0]]);
    acquire(&config, &mut state, 1); // ticket 20 < 30: wounds the set on a, and so on b
    assert_eq!(held(&state), vec![vec![1], vec![]]);
    assert!(!state.ghost.committed_revoked);
}

#[test]
fn canonical_numbers_keep_a_set_alike_in_its_queues_and_newcomers_after_all() {
    let sets: [&[Member]; 3] = [&[(0, W), (1, W)], &[(1, W)], &[(0, W), (1, W)]];
    let config = Config::sets("t", 1, &sets, false);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0); // holds a and b
    acquire(&config, &mut state, 1);
    acquire(&config, &mut state, 2);
    canonicalize(&mut state.nodes[0]);
    let n = &state.nodes[0];
    let places = |k: usize| -> Vec<(u8, u64)> {
        n.keys[k]
            .queue
            .iter()
            .map(|w| (w.owner[0], w.seq))
            .collect()
    };
    assert_eq!(places(0), vec![(2, 1)]);
    assert_eq!(places(1), vec![(1, 0), (2, 1)]);
    assert_eq!(n.arrivals, 2);
}
