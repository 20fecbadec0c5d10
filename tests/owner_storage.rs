//! A lock keeps a client's hex owner two digits to a byte (docs/bench/server.md): the owner must
//! still come back byte for byte everywhere it leaves the server (STATUS, RDB, AOF, replication,
//! DEBUG DIGEST), and only the very owner that took a lock may release it: packing must never
//! make `6F1C...` match `6f1c...`.

use crate::common::*;

/// Owners of every shape: a client's, a queued client's, odd-length and upper-case hex, a UUID,
/// binary bytes, the longest accepted.
fn owners() -> Vec<Vec<u8>> {
    let client = b"6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f".to_vec();
    let mut queued = client.clone();
    queued.extend_from_slice(b":12");
    vec![
        client,
        queued,
        b"0123456789abcdef0".to_vec(),
        b"6F1C2A9E3B7D4C5E9A8F0D2E4B6C8A1F".to_vec(),
        b"6f1c2a9e-3b7d-4c5e-9a8f-0d2e4b6c8a1f".to_vec(),
        b"abcdef01\x00\xff\r\nabcd".to_vec(),
        [b"ab".repeat(100), b"zz".repeat(28)].concat(),
        b"a".repeat(256),
    ]
}

fn owner_of(c: &mut Connection, key: &str) -> Vec<u8> {
    let reply: Vec<Value> = redis::cmd("DLOCK.STATUS").arg(key).query(c).unwrap();
    let at = reply
        .iter()
        .position(|v| redis::from_redis_value_ref::<String>(v).is_ok_and(|name| name == "owner"))
        .expect("STATUS names the owner");
    redis::from_redis_value_ref(&reply[at + 1]).expect("the owner's bytes")
}

fn take_all(c: &mut Connection) {
    for (i, owner) in owners().iter().enumerate() {
        let token: Option<i64> = redis::cmd("DLOCK.ACQUIRE")
            .arg(format!("lock:{i}"))
            .arg(owner)
            .arg(600_000)
            .query(c)
            .unwrap();
        assert!(token.is_some(), "owner {i} takes its lock");
    }
}

fn assert_owners_intact(c: &mut Connection, when: &str) {
    for (i, owner) in owners().iter().enumerate() {
        assert_eq!(
            &owner_of(c, &format!("lock:{i}")),
            owner,
            "owner {i} {when}"
        );
    }
}

#[test]
fn every_owner_comes_back_byte_for_byte_through_status_rdb_and_aof() {
    let server = Server::builder()
        .config("appendonly", "yes")
        .config("enable-debug-command", "yes")
        .start();
    let mut c = server.conn();
    take_all(&mut c);
    assert_owners_intact(&mut c, "as granted");
    redis::cmd("DEBUG").arg("RELOAD").exec(&mut c).unwrap();
    assert_owners_intact(&mut c, "after an RDB reload");
    redis::cmd("BGREWRITEAOF").exec(&mut c).unwrap();
    eventually("the AOF rewrite ends", 10_000, || {
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut c).unwrap();
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
    redis::cmd("DEBUG").arg("LOADAOF").exec(&mut c).unwrap();
    assert_owners_intact(&mut c, "after the AOF is loaded again");
}

#[test]
fn a_replica_holds_the_same_owners_and_digests_alike() {
    let debug = || Server::builder().config("enable-debug-command", "yes");
    let master = debug().start();
    let replica = replica_built(&master, debug());
    let mut m = master.conn();
    take_all(&mut m);
    sync(&mut m);
    let mut r = replica.conn();
    assert_owners_intact(&mut r, "on the replica");
    for i in 0..owners().len() {
        let key = format!("lock:{i}");
        let digest = |c: &mut Connection| -> Vec<String> {
            redis::cmd("DEBUG")
                .arg("DIGEST-VALUE")
                .arg(&key)
                .query(c)
                .unwrap()
        };
        assert_eq!(digest(&mut m), digest(&mut r), "{key}");
    }
}

#[test]
fn only_the_exact_owner_releases_a_packed_lock() {
    let server = Server::start();
    let mut c = server.conn();
    let owner = "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f";
    acquire(&mut c, "packed", owner, 60_000).unwrap();
    for other in [
        owner.to_uppercase(),
        format!("{owner}0"),
        owner[..31].to_string(),
        format!("{owner}:1"),
    ] {
        assert_eq!(
            release(&mut c, "packed", &other),
            0,
            "{other} is not the owner"
        );
        assert_eq!(acquire(&mut c, "packed", &other, 60_000), None, "{other}");
    }
    assert_eq!(release(&mut c, "packed", owner), 1);
}

#[test]
fn a_client_owner_makes_a_smaller_lock_than_an_opaque_one_of_the_same_length() {
    let server = Server::start();
    let mut c = server.conn();
    acquire(&mut c, "hex", "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f", 60_000).unwrap();
    acquire(&mut c, "txt", "6F1C2A9E3B7D4C5E9A8F0D2E4B6C8A1F", 60_000).unwrap();
    let usage = |c: &mut Connection, key: &str| -> i64 {
        redis::cmd("MEMORY").arg("USAGE").arg(key).query(c).unwrap()
    };
    let (hex, txt) = (usage(&mut c, "hex"), usage(&mut c, "txt"));
    assert!(hex + 15 <= txt, "packed {hex} B vs as given {txt} B");
}
