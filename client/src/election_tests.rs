use super::*;
use crate::conformance_tests::{name, table, token};

#[test]
fn an_owner_is_a_candidate_id_then_its_value() {
    assert_eq!(split_owner("ab12:0 10.0.0.1:80"), ("ab12:0", "10.0.0.1:80"));
    assert_eq!(split_owner("ab12:0 a b"), ("ab12:0", "a b"));
    assert_eq!(split_owner("ab12:0"), ("ab12:0", ""));
}

#[test]
fn conformance_leaders() {
    for case in table("leaders.json") {
        let nodes: Vec<Option<Seen>> = case["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .map(|node| match node {
                serde_json::Value::Null => None,
                serde_json::Value::String(free) if free == "free" => Some(None),
                held => Some(Some((
                    held["owner"].as_str().expect("owner").to_string(),
                    token(&held["token"]),
                ))),
            })
            .collect();
        let leader = |v: &serde_json::Value| Leader {
            id: v["id"].as_str().expect("id").to_string(),
            value: v["value"].as_str().expect("value").to_string(),
            epoch: token(&v["epoch"]),
        };
        let previous = case.get("previous").filter(|p| !p.is_null()).map(leader);
        let needed = case["needed"].as_u64().expect("needed") as usize;
        let expected = match &case["leader"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(none) if none == "none" => Some(None),
            held => Some(Some(leader(held))),
        };
        let got = leader_view(&nodes, needed, previous.as_ref());
        assert_eq!(got, expected, "{}", name(&case));
    }
}
