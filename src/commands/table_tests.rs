//! The command table is the single source of docs/commands.md's command reference, and it is
//! internally consistent.

use super::*;

/// The docs/commands.md section between the `commands` markers, rendered from [`COMMANDS`].
fn reference() -> String {
    let mut out =
        String::from("| command | what it does | flags | ACL | since |\n|---|---|---|---|---|\n");
    for c in COMMANDS {
        let acl = match c.audience {
            Audience::App => "@dlock",
            Audience::Operator => "@dangerous",
            Audience::Effect => "internal (Redis 8+), else @dangerous",
        };
        out += &format!(
            "| `{}` | {} | {} | {} | {} |\n",
            c.synopsis(),
            c.summary,
            c.flags,
            acl,
            c.since
        );
    }
    out
}

const START: &str = "<!-- commands:start (generated from src/commands/mod.rs: DLOCK_BLESS=1 cargo test -p dlock readme) -->\n";
const END: &str = "<!-- commands:end -->";

#[test]
fn readme_command_reference_matches_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md");
    let readme = std::fs::read_to_string(path).expect("docs/commands.md");
    let (Some(start), Some(end)) = (readme.find(START), readme.find(END)) else {
        panic!("docs/commands.md lacks the markers:\n{START}...\n{END}");
    };
    let current = &readme[start + START.len()..end];
    let expected = reference();
    if current != expected {
        if std::env::var_os("DLOCK_BLESS").is_some() {
            let updated = format!("{}{START}{expected}{}", &readme[..start], &readme[end..]);
            std::fs::write(path, updated).expect("write docs/commands.md");
        } else {
            panic!("docs/commands.md command reference is stale; run DLOCK_BLESS=1 cargo test -p dlock readme\nexpected:\n{expected}");
        }
    }
}

#[test]
fn every_command_has_a_callback_a_dotted_lowercase_name_and_consistent_arity() {
    assert!(COMMANDS.len() <= CALLBACKS.len(), "add callbacks");
    for c in COMMANDS {
        assert!(
            c.name.starts_with("dlock.") && c.name == c.name.to_ascii_lowercase(),
            "{}",
            c.name
        );
        let fixed = 1 + c
            .usage
            .split_whitespace()
            .take_while(|w| !w.starts_with('['))
            .count();
        let expected = if c.usage.contains('[') {
            -(fixed as i32)
        } else {
            fixed as i32
        };
        assert_eq!(
            c.arity, expected,
            "{}: arity vs usage '{}'",
            c.name, c.usage
        );
        assert_eq!(
            c.key != KeyUse::None,
            c.usage.starts_with("key"),
            "{}: key spec vs usage",
            c.name
        );
        // `key owner ttl-ms [REENTRANT] [PXAT unix-ms]`: each argument's token, or its name.
        let documented: Vec<String> = c
            .args
            .iter()
            .map(|a| match a.kind {
                ArgKind::Flag(token) | ArgKind::Option(token) => token,
                _ => a.name,
            })
            .map(|name| name.to_string_lossy().to_string())
            .collect();
        let used: Vec<String> = c
            .usage
            .split_whitespace()
            .filter(|w| !w.ends_with(']') || w.starts_with('['))
            .map(|w| w.trim_matches(|ch| ch == '[' || ch == ']').to_string())
            .collect();
        assert_eq!(
            documented, used,
            "{}: COMMAND DOCS arguments vs usage",
            c.name
        );
    }
}
