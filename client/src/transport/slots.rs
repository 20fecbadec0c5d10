//! Which master of a Redis Cluster serves a key: the key's hash slot (CRC16 of the key, or of its
//! `{hash tag}`, modulo 16384) and the cluster's slot ranges as `CLUSTER SLOTS` reports them.

use crc::{Crc, CRC_16_XMODEM};
use redis::Value;

const SLOTS: u16 = 16384;
const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// The hash slot of `key`, as Redis Cluster computes it.
pub fn key_slot(key: &[u8]) -> u16 {
    CRC16.checksum(hash_tag(key).unwrap_or(key)) % SLOTS
}

/// The part of `key` between the first `{` and the next `}`, when that part is not empty.
fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// Slot ranges and the `host:port` of the master serving each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotMap {
    ranges: Vec<(u16, u16, String)>,
}

impl SlotMap {
    /// The master serving `slot`, if any range covers it.
    pub fn master(&self, slot: u16) -> Option<&str> {
        let at = self.ranges.partition_point(|(_, end, _)| *end < slot);
        let (start, _, address) = self.ranges.get(at)?;
        (*start <= slot).then_some(address.as_str())
    }

    /// Reads a `CLUSTER SLOTS` reply; a master announced with an empty host is on
    /// `asked_host`, the host the reply came from.
    pub fn parse(reply: &Value, asked_host: &str) -> Result<SlotMap, String> {
        let Value::Array(entries) = reply else {
            return Err(format!("CLUSTER SLOTS: unexpected reply {reply:?}"));
        };
        let mut ranges = entries
            .iter()
            .map(|entry| parse_range(entry, asked_host))
            .collect::<Result<Vec<_>, _>>()?;
        ranges.sort_unstable_by_key(|(start, _, _)| *start);
        if ranges.is_empty() {
            return Err("CLUSTER SLOTS: no slot is served (cluster not set up?)".into());
        }
        Ok(SlotMap { ranges })
    }
}

/// `[start, end, [host, port, ...], replicas...]`.
fn parse_range(entry: &Value, asked_host: &str) -> Result<(u16, u16, String), String> {
    let bad = || format!("CLUSTER SLOTS: unexpected entry {entry:?}");
    let Value::Array(fields) = entry else {
        return Err(bad());
    };
    let (Some(start), Some(end), Some(Value::Array(master))) =
        (slot_at(fields, 0), slot_at(fields, 1), fields.get(2))
    else {
        return Err(bad());
    };
    let host = match master.first() {
        Some(Value::BulkString(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        Some(Value::SimpleString(text)) => text.clone(),
        _ => return Err(bad()),
    };
    let Some(Value::Int(port)) = master.get(1) else {
        return Err(bad());
    };
    let host = if host.is_empty() || host == "?" {
        asked_host.to_string()
    } else {
        host
    };
    Ok((start, end, address(&host, *port)))
}

fn slot_at(fields: &[Value], at: usize) -> Option<u16> {
    match fields.get(at)? {
        Value::Int(n) => u16::try_from(*n).ok().filter(|slot| *slot < SLOTS),
        _ => None,
    }
}

/// `host:port`, with an IPv6 host in brackets.
pub fn address(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A set's names as a Redis Cluster takes them (docs/multi.md): the names of one slot together
/// (one call each), groups in slot order, names sorted by bytes inside a group; one global
/// order, so that sets taken group by group never wait for each other in a cycle.
pub fn set_groups(names: &[String]) -> Vec<Vec<String>> {
    let mut by_slot: std::collections::BTreeMap<u16, Vec<String>> = Default::default();
    for name in names {
        by_slot
            .entry(key_slot(name.as_bytes()))
            .or_default()
            .push(name.clone());
    }
    by_slot
        .into_values()
        .map(|mut group| {
            group.sort();
            group
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster_spec_examples() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(key_slot(b"123456789"), 0x31C3 % SLOTS);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn range(start: i64, end: i64, host: &str, port: i64) -> Value {
        let master = Value::Array(vec![bulk(host), Value::Int(port), bulk("id")]);
        Value::Array(vec![Value::Int(start), Value::Int(end), master])
    }

    #[test]
    fn a_slot_map_finds_the_master_of_each_slot() {
        let reply = Value::Array(vec![
            range(5461, 10922, "10.0.0.2", 7001),
            range(0, 5460, "", 7000),
            range(10923, 16383, "::1", 7002),
        ]);
        let map = SlotMap::parse(&reply, "seed.example").expect("parses");
        assert_eq!(map.master(0), Some("seed.example:7000"));
        assert_eq!(map.master(5461), Some("10.0.0.2:7001"));
        assert_eq!(map.master(16383), Some("[::1]:7002"));
    }

    #[test]
    fn unserved_slots_and_bad_replies_are_told_apart() {
        let map = SlotMap::parse(&Value::Array(vec![range(100, 200, "h", 1)]), "x").unwrap();
        assert_eq!(map.master(99), None);
        assert_eq!(map.master(201), None);
        assert!(SlotMap::parse(&Value::Array(vec![]), "x").is_err());
        assert!(SlotMap::parse(&Value::Int(3), "x").is_err());
        let too_high = Value::Array(vec![range(0, 16384, "h", 1)]);
        assert!(SlotMap::parse(&too_high, "x").is_err());
    }
}
