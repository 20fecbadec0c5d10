use dlock_core::{Mode, Want};

use super::*;
use crate::config::Config;
use crate::system::Phase;

const READ: Want = Want::Shared;
const WRITE: Want = Want::Exclusive;
const PERMIT: Want = Want::Permit { limit: 2 };

fn acquire(config: &Config, state: &mut State, client: usize) {
    let msg = Msg::Acquire {
        client,
        round: 0,
        ticket: state.clients[client].ticket,
    };
    on_message(config, state, 0, msg);
}

fn modes(state: &State) -> Vec<(u8, Mode)> {
    let holders = &state.nodes[0].holders;
    holders.iter().map(|h| (h.owner[0], h.mode)).collect()
}

#[test]
fn readers_share_and_a_smaller_ticket_writer_wounds_their_tentative_grants() {
    let config = Config::asking("t", 3, &[READ, READ, WRITE]);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    acquire(&config, &mut state, 1);
    assert_eq!(modes(&state), vec![(0, Mode::Shared), (1, Mode::Shared)]);
    acquire(&config, &mut state, 2);
    // The writer's ticket (10) is the smallest, but the readers' grants were tentative for
    // larger tickets: it wounds both and is granted.
    assert_eq!(modes(&state), vec![(2, Mode::Exclusive)]);
    assert!(!state.ghost.committed_revoked);
}

#[test]
fn a_queued_writer_is_served_once_the_committed_readers_leave() {
    let config = Config::asking("t", 3, &[READ, WRITE]);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    let token = state.nodes[0].holders[0].token;
    fence(&config, &mut state, 0, (0, 0), token);
    acquire(&config, &mut state, 1);
    assert_eq!(modes(&state), vec![(0, Mode::Shared)]);
    assert_eq!(state.nodes[0].queue.len(), 1);
    on_message(
        &config,
        &mut state,
        0,
        Msg::Release {
            client: 0,
            round: 0,
        },
    );
    assert_eq!(modes(&state), vec![(1, Mode::Exclusive)]);
}

#[test]
fn a_semaphore_admits_its_limit_and_serves_the_head_when_a_lease_ends() {
    let mut config = Config::asking("t", 3, &[PERMIT]);
    config.earlier = vec![PERMIT, PERMIT];
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    assert_eq!(state.nodes[0].holders.len(), 2);
    expire(&config, &mut state, 0, 0);
    assert_eq!(
        modes(&state),
        vec![(u8::MAX, Mode::Permit), (0, Mode::Permit)]
    );
}

#[test]
fn the_mutants_feed_the_rules_another_view() {
    let mut config = Config::asking("t", 3, &[WRITE, READ]);
    config.mutant = Some(Mutant::ReaderBesideWriter);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    acquire(&config, &mut state, 1);
    assert_eq!(modes(&state), vec![(0, Mode::Exclusive), (1, Mode::Shared)]);

    let mut config = Config::asking("t", 3, &[PERMIT]);
    config.earlier = vec![PERMIT, PERMIT];
    config.mutant = Some(Mutant::ExpiredPermitKept);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0);
    expire(&config, &mut state, 0, 0);
    assert_eq!(
        state.nodes[0].holders.len(),
        2,
        "the ended lease still counts"
    );
    assert_eq!(state.nodes[0].queue.len(), 1);
}

#[test]
fn a_client_holding_from_the_start_is_committed_on_its_nodes() {
    let mut config = Config::asking("t", 3, &[PERMIT, PERMIT]);
    config.holding_at_start = vec![(1, vec![0, 1, 2])];
    let mut state = State::initial(&config);
    crate::client::start_holding(&config, &mut state);
    assert_eq!(state.clients[1].phase, Phase::Holding);
    let tokens: Vec<_> = state.nodes.iter().map(|n| n.holders[0].token).collect();
    assert_eq!(tokens, vec![11; 3], "committed with the largest grant");
    assert!(state.nodes.iter().all(|n| n.holders[0].tentative.is_none()));
}

#[test]
fn a_plain_lock_is_one_exclusive_holder_wounded_only_while_tentative() {
    let config = Config::base("t", 3, 2);
    let mut state = State::initial(&config);
    acquire(&config, &mut state, 0); // ticket 30
    acquire(&config, &mut state, 1); // ticket 20: wounds the tentative grant of 30
    assert_eq!(modes(&state), vec![(1, Mode::Exclusive)]);
    let token = state.nodes[0].holders[0].token;
    fence(&config, &mut state, 0, (1, 0), token);
    assert!(state.nodes[0].holders[0].tentative.is_none());
    acquire(&config, &mut state, 0);
    assert_eq!(
        modes(&state),
        vec![(1, Mode::Exclusive)],
        "committed: never revoked"
    );
    assert_eq!(state.nodes[0].queue.len(), 1);
    assert!(!state.ghost.committed_revoked);
}
