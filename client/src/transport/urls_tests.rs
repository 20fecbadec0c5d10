//! Node URLs: what each form reads as, what is refused, and what a name shows.

use super::*;

#[test]
fn port_0_and_impossible_databases_are_refused() {
    for url in [
        "redis://127.0.0.1:0",
        "rediss://h:0",
        "redis+cluster://h:0",
        "redis://h:1/99999999999",
        "redis://h:1/-1",
        "redis://h:1?db=2147483647",
        &format!("redis://{}:1", "a".repeat(64)),
        &format!("redis+sentinel://{}.b:1/m", "a".repeat(64)),
        &format!("redis://{}:1", "a.".repeat(130)),
    ] {
        assert!(parse(url).is_err(), "{url}");
    }
    assert!(parse("redis://h:1/2147483646").is_ok());
}

#[test]
fn sentinel_urls_name_sentinels_credentials_and_the_master() {
    let Ok(NodeUrl::Sentinel(parts)) =
        parse("redis+sentinel://u:p@10.0.0.1:26379,h2:26380,[::1],h3/mymaster")
    else {
        panic!("not a sentinel URL");
    };
    assert!(!parts.tls);
    assert_eq!(parts.credentials, "u:p@");
    let named: Vec<(&str, u16)> = parts
        .sentinels
        .iter()
        .map(|(h, p)| (h.as_str(), *p))
        .collect();
    assert_eq!(
        named,
        [
            ("10.0.0.1", 26379),
            ("h2", 26380),
            ("::1", 26379),
            ("h3", 26379)
        ]
    );
    assert_eq!(parts.master_name, "mymaster");
}

#[test]
fn a_single_servers_query_sets_its_database_and_client_name() {
    let Ok(NodeUrl::Single { info, client_name }) =
        parse("redis://h:1/3?db=5&client_name=worker%201")
    else {
        panic!("not a single URL");
    };
    assert_eq!(info.redis_settings().db(), 5, "the query's db wins");
    assert_eq!(client_name.as_deref(), Some("worker 1"));
    let refused = parse("redis://h:1?db=1&db=2").unwrap_err();
    assert!(refused.contains("twice"), "{refused}");
    assert!(parse("redis://h:1?db=x").is_err());
}

#[test]
fn passwords_are_hidden_in_names_and_errors() {
    assert_eq!(redact("redis://app:secret@h:1/2"), "redis://app:***@h:1/2");
    assert_eq!(redact("unix://u:secret@/tmp/s"), "unix://u:***@/tmp/s");
    assert_eq!(redact("redis://h:1?x=y"), "redis://h:1?x=y");
    assert_eq!(
        redact("unix:///s?db=1&password=secret#f"),
        "unix:///s?db=1&password=***#f"
    );
    let refused = parse("redis://app:secret@h:1?foo=bar").unwrap_err();
    assert!(
        !refused.contains("secret") && refused.contains("foo"),
        "{refused}"
    );
}
