//! Atomic slot migration as an operator runs it: Redis 8.4+ `CLUSTER MIGRATION IMPORT` on the
//! importing node, Valkey 9+ `CLUSTER MIGRATESLOTS` on the source; waited for through each
//! server's own status command. Servers without it (Redis before 8.4, Valkey 8) report `None`.

use std::time::{Duration, Instant};

use crate::cluster::Cluster;

/// Which atomic slot migration a server offers.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum AtomicMigration {
    Redis,
    Valkey,
}

/// How a started migration ended.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Ended {
    Completed,
    Cancelled,
    /// The server gave up (its other side failed over or went away, say).
    Failed,
}

/// The atomic slot migration the server behind `c` offers, if any.
pub fn atomic_migration(c: &mut redis::Connection) -> Option<AtomicMigration> {
    let info: String = redis::cmd("INFO").arg("server").query(c).ok()?;
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_string())
    };
    let version = |text: Option<String>| -> (u32, u32) {
        let text = text.unwrap_or_default();
        let mut parts = text.split('.').map(|p| p.parse().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    };
    if field("server_name").as_deref() == Some("valkey") {
        return (version(field("valkey_version")) >= (9, 0)).then_some(AtomicMigration::Valkey);
    }
    (version(field("redis_version")) >= (8, 4)).then_some(AtomicMigration::Redis)
}

/// A migration of one slot, started and not yet waited for.
pub struct Migration {
    kind: AtomicMigration,
    /// The node the status is read on (Redis: the target; Valkey: the source).
    on: usize,
    id: String,
}

impl Cluster {
    /// Starts moving `slot` from node `from` to node `to` with the `kind` of atomic migration
    /// the servers have. Only the node that runs the command is asked anything (Redis: the
    /// target; Valkey: the source), so the other one may be frozen.
    pub fn start_atomic_migration(
        &self,
        kind: AtomicMigration,
        slot: u16,
        from: usize,
        to: usize,
    ) -> Migration {
        match kind {
            AtomicMigration::Redis => {
                let id: String = redis::cmd("CLUSTER")
                    .arg("MIGRATION")
                    .arg("IMPORT")
                    .arg(slot)
                    .arg(slot)
                    .query(&mut self.nodes[to].conn())
                    .expect("CLUSTER MIGRATION IMPORT");
                Migration { kind, on: to, id }
            }
            AtomicMigration::Valkey => {
                let mut source = self.nodes[from].conn();
                let target_id = id_of_port(&mut source, self.nodes[to].port());
                redis::cmd("CLUSTER")
                    .arg("MIGRATESLOTS")
                    .arg("SLOTSRANGE")
                    .arg(slot)
                    .arg(slot)
                    .arg("NODE")
                    .arg(&target_id)
                    .exec(&mut source)
                    .expect("CLUSTER MIGRATESLOTS");
                Migration {
                    kind,
                    on: from,
                    id: String::new(),
                }
            }
        }
    }

    /// Cancels `migration` (Redis: `CLUSTER MIGRATION CANCEL ID`; Valkey: `CLUSTER
    /// CANCELSLOTMIGRATIONS`).
    pub fn cancel_atomic_migration(&self, migration: &Migration) {
        let mut c = self.nodes[migration.on].conn();
        let mut cmd = redis::cmd("CLUSTER");
        match migration.kind {
            AtomicMigration::Redis => cmd
                .arg("MIGRATION")
                .arg("CANCEL")
                .arg("ID")
                .arg(&migration.id),
            AtomicMigration::Valkey => cmd.arg("CANCELSLOTMIGRATIONS"),
        };
        cmd.exec(&mut c).expect("cancel the migration");
    }

    /// Waits until `migration` has ended (completed, cancelled or failed) and returns how, and
    /// when it was first seen ended; panics after `timeout`.
    pub fn wait_atomic_migration(
        &self,
        migration: &Migration,
        timeout: Duration,
    ) -> (Ended, Instant) {
        let deadline = Instant::now() + timeout;
        loop {
            let state = self.migration_state(migration);
            let seen = Instant::now();
            match state.as_str() {
                "completed" | "success" => return (Ended::Completed, seen),
                "canceled" | "cancelled" => return (Ended::Cancelled, seen),
                "failed" => return (Ended::Failed, seen),
                _ => {}
            }
            assert!(
                Instant::now() < deadline,
                "slot migration still {state:?} after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The migration's state as its server names it (lower case).
    fn migration_state(&self, migration: &Migration) -> String {
        let mut c = self.nodes[migration.on].conn();
        let reply: redis::Value = match migration.kind {
            AtomicMigration::Redis => redis::cmd("CLUSTER")
                .arg("MIGRATION")
                .arg("STATUS")
                .arg("ID")
                .arg(&migration.id)
                .query(&mut c),
            AtomicMigration::Valkey => redis::cmd("CLUSTER").arg("GETSLOTMIGRATIONS").query(&mut c),
        }
        .unwrap_or(redis::Value::Nil);
        last_state(&reply).unwrap_or_default().to_lowercase()
    }
}

/// The value after the last `state` field anywhere in a status reply (the newest job is last).
fn last_state(reply: &redis::Value) -> Option<String> {
    let redis::Value::Array(items) = reply else {
        return None;
    };
    let mut state = None;
    for pair in items.windows(2) {
        let name: Option<String> = redis::from_redis_value_ref(&pair[0]).ok();
        if name.as_deref() == Some("state") {
            state = redis::from_redis_value_ref(&pair[1]).ok();
        }
    }
    for item in items {
        if let Some(inner) = last_state(item) {
            state = Some(inner);
        }
    }
    state
}

/// The node ID that the node behind `c` knows for the node on loopback `port`.
fn id_of_port(c: &mut redis::Connection, port: u16) -> String {
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(c)
        .expect("CLUSTER NODES");
    let address = format!("127.0.0.1:{port}@");
    nodes
        .lines()
        .find(|l| l.split(' ').nth(1).is_some_and(|a| a.starts_with(&address)))
        .and_then(|l| l.split(' ').next())
        .expect("the node is in CLUSTER NODES")
        .to_string()
}
