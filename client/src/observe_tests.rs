use super::*;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn a_top_step_reads_as_a_resp2_array_or_a_resp3_map() {
    let waiting = Value::Array(vec![Value::Array(vec![
        bulk("orders"),
        Value::Int(3),
        Value::Int(1500),
        bulk("w1"),
        Value::Int(42),
        Value::Int(9000),
    ])]);
    let free = Value::Array(vec![Value::Array(vec![
        bulk("idle"),
        Value::Int(1),
        Value::Int(10),
        Value::Nil,
        Value::Nil,
        Value::Nil,
    ])]);
    let held = Value::Array(vec![Value::Array(vec![
        bulk("orders"),
        bulk("w1"),
        Value::Int(42),
        Value::Int(9000),
        Value::Int(1),
        Value::Int(3),
        bulk("shared"),
        Value::Int(7), // a field a newer module may add: ignored
    ])]);
    let resp2 = Value::Array(vec![
        bulk("cursor"),
        bulk("17"),
        bulk("waiting"),
        waiting.clone(),
        bulk("held"),
        held.clone(),
    ]);
    let step = parse_top(resp2).expect("parsed");
    assert_eq!(step.cursor, 17);
    let holder = Holder {
        owner: "w1".into(),
        token: 42,
        ttl: Duration::from_secs(9),
    };
    assert_eq!(
        step.waiting,
        [QueuedLock {
            resource: "orders".into(),
            waiters: 3,
            oldest_wait: Duration::from_millis(1500),
            holder: Some(holder.clone()),
        }]
    );
    assert_eq!(step.held[0].holder, holder);
    assert_eq!((step.held[0].holds, step.held[0].waiters), (1, 3));
    assert_eq!(step.held[0].mode, "shared");
    let resp3 = Value::Map(vec![
        (bulk("cursor"), bulk("0")),
        (bulk("waiting"), free),
        (bulk("held"), Value::Array(vec![])),
    ]);
    let step = parse_top(resp3).expect("parsed");
    assert_eq!((step.cursor, step.waiting[0].holder.clone()), (0, None));
    assert!(parse_top(Value::Int(1)).is_err());
    let short = Value::Array(vec![
        bulk("held"),
        Value::Array(vec![Value::Array(vec![bulk("k")])]),
    ]);
    assert!(
        parse_top(short).is_err(),
        "a short row is an error, not a panic"
    );
}

#[test]
fn the_queue_position_and_holders_read_both_status_shapes() {
    let waiters = Value::Array(vec![
        Value::Array(vec![bulk("a:0"), Value::Nil, Value::Int(30)]),
        Value::Array(vec![bulk("me:1"), Value::Int(5), Value::Int(20)]),
    ]);
    let exclusive = Value::Array(vec![
        bulk("owner"),
        bulk("h"),
        bulk("token"),
        Value::Int(9),
        bulk("ttl"),
        Value::Int(2500),
        bulk("holds"),
        Value::Int(1),
    ]);
    let state = queue_state(waiters.clone(), exclusive, "me:1").expect("parsed");
    assert_eq!((state.position, state.waiters), (Some(2), 2));
    assert_eq!(state.holders[0].owner, "h");
    assert_eq!(state.holders[0].ttl, Duration::from_millis(2500));
    // A shared lock (kind, limit, holders as maps, waiters).
    let holder = |owner: &str, token: i64| {
        Value::Map(vec![
            (bulk("owner"), bulk(owner)),
            (bulk("token"), Value::Int(token)),
            (bulk("ttl"), Value::Int(1000)),
            (bulk("holds"), Value::Int(1)),
            (bulk("mode"), bulk("shared")),
        ])
    };
    let shared = Value::Map(vec![
        (bulk("kind"), bulk("shared")),
        (bulk("limit"), Value::Int(3)),
        (
            bulk("holders"),
            Value::Array(vec![holder("r1", 4), holder("r2", 5)]),
        ),
        (bulk("waiters"), Value::Int(2)),
    ]);
    let state = queue_state(waiters.clone(), shared, "nobody").expect("parsed");
    assert_eq!(state.position, None);
    let owners: Vec<&str> = state.holders.iter().map(|h| h.owner.as_str()).collect();
    assert_eq!(owners, ["r1", "r2"]);
    let free = queue_state(Value::Array(vec![]), Value::Nil, "me").expect("parsed");
    assert_eq!(free, QueueState::default());
    assert!(queue_state(Value::Int(1), Value::Nil, "me").is_err());
}
