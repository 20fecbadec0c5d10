//! Settings: restart quarantine, CONFIG SET / GET of every dlock.* option, module arguments
//! validated like CONFIG SET, and redis.conf.example loaded as-is.

use crate::common::*;
use redis::RedisResult;

fn config_get(c: &mut Connection, name: &str) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(c).unwrap();
    pair.get(1)
        .cloned()
        .unwrap_or_else(|| panic!("{name} not found"))
}

fn config_set(c: &mut Connection, name: &str, value: &str) -> RedisResult<()> {
    redis::cmd("CONFIG").arg("SET").arg(name).arg(value).exec(c)
}

#[test]
fn quarantine_refuses_new_grants_then_grants() {
    let server = Server::builder()
        .config("dlock.quarantine-ms", "1500")
        .start();
    let mut c = server.conn();
    let error = error_of(&mut c, &["DLOCK.ACQUIRE", "k", "o", "1000"]);
    assert!(error.starts_with("TRYAGAIN"), "{error}");
    let ms_left: u64 = error
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no milliseconds in: {error}"));
    assert!((1..=1500).contains(&ms_left), "{error}");
    assert!(info_field(&mut c, "quarantine_left_ms") > 0);
    assert_eq!(status(&mut c, "k"), None, "nothing granted");
    eventually("quarantine over", 3_000, || {
        info_field(&mut c, "quarantine_left_ms") == 0
    });
    assert!(acquire(&mut c, "k", "o", 1_000).is_some());
}

#[test]
fn quarantine_still_lets_a_persisted_holder_renew_and_release() {
    let mut server = Server::builder()
        .config("appendonly", "yes")
        .config("appendfsync", "always")
        .start();
    let token = acquire(&mut server.conn(), "k", "alice", 60_000).unwrap();
    server.kill();
    server.restart();
    let mut c = server.conn();
    // The window counts from module load, so raising it now puts the node back in quarantine.
    config_set(&mut c, "dlock.quarantine-ms", "60000").unwrap();
    assert!(error_of(&mut c, &["DLOCK.ACQUIRE", "other", "o", "1000"]).starts_with("TRYAGAIN"));
    assert_eq!(
        acquire(&mut c, "k", "alice", 60_000),
        Some(token),
        "holder renews"
    );
    assert_eq!(
        acquire(&mut c, "k", "bob", 60_000),
        None,
        "others still see it held"
    );
    assert_eq!(release(&mut c, "k", "alice"), 1);
    assert!(error_of(&mut c, &["DLOCK.ACQUIRE", "k", "bob", "1000"]).starts_with("TRYAGAIN"));
    config_set(&mut c, "dlock.quarantine-ms", "0").unwrap();
    assert!(acquire(&mut c, "k", "bob", 1_000).is_some());
}

#[test]
fn options_from_the_command_line_show_in_config_get() {
    let server = Server::builder()
        .config("dlock.max-ttl-ms", "5000")
        .config("dlock.clock-floor", "no")
        .start();
    let mut c = server.conn();
    assert_eq!(config_get(&mut c, "dlock.max-ttl-ms"), "5000");
    assert_eq!(config_get(&mut c, "dlock.clock-floor"), "no");
    assert_eq!(config_get(&mut c, "dlock.quarantine-ms"), "0");
    assert!(error_of(&mut c, &["DLOCK.ACQUIRE", "k", "o", "5001"]).contains("from 1 to 5000"));
    assert_eq!(
        acquire(&mut c, "k", "o", 5_000),
        Some(1),
        "no clock floor: counter starts at 1"
    );
}

#[test]
fn config_set_max_ttl_applies_at_once_and_rejects_bad_values() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(config_get(&mut c, "dlock.max-ttl-ms"), "86400000");
    config_set(&mut c, "dlock.max-ttl-ms", "1000").unwrap();
    assert!(error_of(&mut c, &["DLOCK.ACQUIRE", "k", "o", "1001"]).contains("from 1 to 1000"));
    assert!(error_of(&mut c, &["DLOCK.EXTEND", "k", "o", "1001"]).contains("from 1 to 1000"));
    assert!(acquire(&mut c, "k", "o", 1_000).is_some());
    for bad in ["0", "-1", "abc", "315360000001"] {
        assert!(
            config_set(&mut c, "dlock.max-ttl-ms", bad).is_err(),
            "{bad} accepted"
        );
    }
    assert_eq!(config_get(&mut c, "dlock.max-ttl-ms"), "1000");
}

#[test]
fn config_set_clock_floor_switches_token_style() {
    let server = Server::start();
    let mut c = server.conn();
    config_set(&mut c, "dlock.clock-floor", "no").unwrap();
    let a = acquire(&mut c, "a", "o", 1_000).unwrap();
    let b = acquire(&mut c, "b", "o", 1_000).unwrap();
    assert_eq!((a, b), (1, 2), "plain counter");
    config_set(&mut c, "dlock.clock-floor", "yes").unwrap();
    let now_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64;
    let floored = acquire(&mut c, "c", "o", 1_000).unwrap();
    assert!(
        floored >= now_us - 1_000_000,
        "floored to wall clock: {floored}"
    );
    assert!(config_set(&mut c, "dlock.clock-floor", "maybe").is_err());
}

#[test]
fn config_set_quarantine_counts_from_module_load() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(acquire(&mut c, "a", "o", 1_000).is_some());
    config_set(&mut c, "dlock.quarantine-ms", "600000").unwrap();
    assert!(error_of(&mut c, &["DLOCK.ACQUIRE", "b", "o", "1000"]).starts_with("TRYAGAIN"));
    config_set(&mut c, "dlock.quarantine-ms", "0").unwrap();
    assert!(acquire(&mut c, "b", "o", 1_000).is_some());
    assert!(config_set(&mut c, "dlock.quarantine-ms", "-1").is_err());
}

#[test]
fn redis_conf_example_loads_and_sets_every_option() {
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/redis.conf.example"))
            .expect("redis.conf.example");
    let module = dlock_testkit::module_path();
    let conf = example.replace(
        "/path/to/dlock/target/release/libdlock.so",
        module.to_str().unwrap(),
    );
    assert_ne!(
        conf, example,
        "the loadmodule line is where the example says"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redis.conf");
    std::fs::write(&path, conf).unwrap();
    let server = Server::builder().config_file(&path).start();
    let mut c = server.conn();
    for (name, value) in [
        ("dlock.max-ttl-ms", "86400000"),
        ("dlock.quarantine-ms", "0"),
        ("dlock.clock-floor", "yes"),
        ("dlock.allow-eviction", "no"),
    ] {
        assert_eq!(config_get(&mut c, name), value, "{name}");
        assert!(
            example.contains(&format!("\n{name} {value}\n")),
            "{name} documented"
        );
    }
    assert!(acquire(&mut c, "k", "o", 1_000).is_some());
}

/// packaging/dlock.conf (the release's reference snippet: the tarball's dlock.conf, the .deb's
/// /etc/redis/modules/dlock.conf) is all comments: the loadmodule line and exactly the options
/// the module registers (CONFIG GET dlock.*), each commented out ("# dlock.NAME VALUE"), at its
/// default and under a comment. Uncommented, its lines load the module and set them all.
#[test]
fn the_release_snippet_lists_every_option_at_its_default() {
    let snippet =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/packaging/dlock.conf"))
            .expect("packaging/dlock.conf");
    let lines: Vec<&str> = snippet.lines().collect();
    // A setting line: "# loadmodule PATH" or "# dlock.NAME VALUE" (one word of value); the prose
    // around them is any other comment.
    let setting = |line: &str| -> Option<(String, String)> {
        let rest = line.strip_prefix("# ")?;
        let (name, value) = rest.split_once(' ')?;
        ((name == "loadmodule" || name.starts_with("dlock.")) && !value.contains(' '))
            .then(|| (name.to_string(), value.to_string()))
    };
    let mut listed = std::collections::BTreeMap::new();
    let mut loadmodule = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.is_empty() || line.starts_with('#'),
            "line {}: every line is commented out: {line:?}",
            i + 1
        );
        let Some((name, value)) = setting(line) else {
            continue;
        };
        assert!(
            i > 0 && lines[i - 1].starts_with('#') && setting(lines[i - 1]).is_none(),
            "{name}: a comment above it"
        );
        if name == "loadmodule" {
            loadmodule.push(value);
        } else {
            assert!(listed.insert(name.clone(), value).is_none(), "{name} twice");
        }
    }
    assert_eq!(
        loadmodule,
        ["/usr/lib/redis/modules/dlock.so"],
        "one loadmodule line, the .deb's path"
    );
    // The lines uncommented, the module's path this build's: a configuration file.
    let module = dlock_testkit::module_path();
    let mut conf = format!("loadmodule {}\n", module.to_str().unwrap());
    for (name, value) in &listed {
        conf.push_str(&format!("{name} {value}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("redis.conf");
    std::fs::write(&path, conf).unwrap();
    let server = Server::builder().config_file(&path).start();
    let mut c = server.conn();
    let pairs: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("dlock.*")
        .query(&mut c)
        .unwrap();
    let registered: std::collections::BTreeMap<String, String> = pairs
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect();
    assert_eq!(
        listed, registered,
        "packaging/dlock.conf vs CONFIG GET dlock.*"
    );
    // Each at its default: a server with the module alone shows the same.
    let plain = Server::builder().start();
    let defaults: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("dlock.*")
        .query(&mut plain.conn())
        .unwrap();
    let defaults: std::collections::BTreeMap<String, String> = defaults
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect();
    assert_eq!(
        listed, defaults,
        "packaging/dlock.conf's values are the defaults"
    );
}

#[test]
fn module_arguments_are_applied_with_or_without_the_prefix() {
    let server = Server::builder()
        .module_args([
            "max-ttl-ms",
            "5000",
            "dlock.quarantine-ms",
            "30000",
            "clock-floor",
            "no",
        ])
        .start();
    let mut c = server.conn();
    assert_eq!(config_get(&mut c, "dlock.max-ttl-ms"), "5000");
    assert_eq!(config_get(&mut c, "dlock.quarantine-ms"), "30000");
    assert_eq!(config_get(&mut c, "dlock.clock-floor"), "no");
    let error = error_of(&mut c, &["DLOCK.ACQUIRE", "k", "o", "1000"]);
    assert!(
        error.starts_with("TRYAGAIN"),
        "the quarantine applies: {error}"
    );
}

#[test]
fn a_bad_module_argument_stops_the_load_naming_it() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["clock-floor", "on"],
            "module argument 'clock-floor on' refused: must be yes or no",
        ),
        (
            &["max-ttl-ms", "0"],
            "module argument 'max-ttl-ms 0' refused: must be an integer from 1 to 315360000000",
        ),
        (
            &["max-ttl-ms", "9223372036854775807"],
            "refused: must be an integer from 1 to 315360000000",
        ),
        (
            &["dlock.quarantine-ms", "-5"],
            "module argument 'dlock.quarantine-ms -5' refused",
        ),
        (&["max-ttl"], "come in 'name value' pairs"),
        (
            &["no-such-option", "1"],
            "unknown module argument 'no-such-option'",
        ),
    ];
    for (args, expected) in cases {
        let (status, log) = Server::builder()
            .module_args(args.iter().copied())
            .start_failing();
        assert!(!status.success(), "{args:?}");
        assert!(
            log.contains(expected),
            "{args:?}: the log lacks {expected:?}:\n{log}"
        );
    }
}

#[test]
fn a_bad_setting_in_the_server_configuration_stops_the_load() {
    let (status, log) = Server::builder()
        .config("dlock.max-ttl-ms", "0")
        .start_failing();
    assert!(!status.success());
    assert!(log.contains("dlock.max-ttl-ms"), "{log}");
}
