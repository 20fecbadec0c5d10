//! conformance/sets.json: a set refused before anything is sent, the exact command each
//! operation sends to a node, and the order a Redis Cluster takes a set's slot groups in.

use serde_json::Value;

use crate::commands::{words, Request, SetOp};
use crate::conformance_tests::{name, table};
use crate::errors::Error;
use crate::kind::LockSet;

fn set_of(case: &Value) -> Result<LockSet, Error> {
    let names: Vec<String> = case["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|n| n.as_str().expect("a name").to_string())
        .collect();
    let mut set = LockSet::new(names.clone())?;
    if let Some(modes) = case["modes"].as_array() {
        if modes.len() != names.len() {
            return Err(Error::InvalidArgument("one mode per resource".into()));
        }
        for (name, mode) in names.iter().zip(modes) {
            match mode.as_str() {
                Some("x") => {}
                Some("s") => set = set.shared(name)?,
                _ => return Err(Error::InvalidArgument("a mode is x or s".into())),
            }
        }
    }
    Ok(set)
}

fn expected(case: &Value, op: &str) -> Vec<String> {
    case["commands"][op]
        .as_array()
        .expect("a command")
        .iter()
        .map(|w| w.as_str().expect("a word").to_string())
        .collect()
}

#[test]
fn sets() {
    for case in table("sets.json") {
        let made = set_of(&case);
        if !case["accepted"].as_bool().expect("accepted") {
            assert!(
                matches!(made, Err(Error::InvalidArgument(_))),
                "{}: {made:?}",
                name(&case)
            );
            continue;
        }
        let set = made.expect("an accepted set");
        let owner = case["owner"].as_str().expect("owner");
        let ttl_ms = case["ttl_ms"].as_u64().expect("ttl_ms");
        let ops = [
            ("acquire", SetOp::Acquire { ttl_ms, wait: None }),
            (
                "acquire_wait",
                SetOp::Acquire {
                    ttl_ms,
                    wait: Some((5000, Some(7))),
                },
            ),
            ("release", SetOp::Release),
            ("extend", SetOp::Extend { ttl_ms }),
            (
                "fence",
                SetOp::Fence {
                    token: 42,
                    ttl_ms: Some(ttl_ms),
                },
            ),
        ];
        for (op, set_op) in ops {
            let sent = words(Request::Set {
                set: &set,
                owner,
                op: set_op,
            });
            assert_eq!(sent, expected(&case, op), "{}: {op}", name(&case));
        }
        let groups: Vec<Vec<String>> =
            serde_json::from_value(case["groups"].clone()).expect("groups");
        assert_eq!(crate::set_groups(set.names()), groups, "{}", name(&case));
    }
}
