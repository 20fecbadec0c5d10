//! The command table is the single source of docs/commands.md's command reference (generated,\n//! checked here), and it is
//! internally consistent.

use super::*;

/// The docs/commands.md section between the `commands` markers, rendered from [`COMMANDS`]:
/// the facts `COMMAND DOCS` / `COMMAND INFO` serve (synopsis, arity, flags, key use, ACL category,
/// since) and what each command replies.
fn reference() -> String {
    let mut out = String::from(
        "| command | what it does | cost | arity | flags | key spec | ACL | since |\n|---|---|---|---|---|---|---|---|\n",
    );
    for c in COMMANDS {
        let acl = match c.audience {
            Audience::App => "@dlock",
            Audience::Operator => "@dangerous",
            Audience::Effect => "internal (Redis 8+), else @dangerous",
        };
        let key = match c.key {
            KeyUse::None => "none",
            KeyUse::Read => "1: RO ACCESS",
            KeyUse::Update => "1: RW UPDATE",
            KeyUse::Delete => "1: RW DELETE",
            KeyUse::Overwrite => "1: OW UPDATE",
            KeyUse::Gate => "1: RW UPDATE; then the command's keys (getkeys API)",
            KeyUse::Keys => "numkeys at 1, then the keys: RW UPDATE",
            KeyUse::KeysDelete => "numkeys at 1, then the keys: RW DELETE",
        };
        out += &format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            // A `|` in a synopsis would end the markdown cell.
            c.synopsis().replace('|', "\\|"),
            c.summary,
            c.complexity,
            c.arity,
            c.flags,
            key,
            acl,
            c.since
        );
    }
    out
}

const START: &str = "<!-- commands:start (generated from the table in src/commands/table.rs by DLOCK_BLESS=1 cargo test -p dlock commands_reference; do not edit) -->\n";
const END: &str = "<!-- commands:end -->";

/// Fails when docs/commands.md and the table drift; `DLOCK_BLESS=1` rewrites the page instead.
#[test]
fn commands_reference_matches_the_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md");
    let page = std::fs::read_to_string(path).expect("docs/commands.md");
    let (Some(start), Some(end)) = (page.find(START), page.find(END)) else {
        panic!("docs/commands.md lacks the markers:\n{START}...\n{END}");
    };
    let current = &page[start + START.len()..end];
    let expected = reference();
    if current != expected {
        if std::env::var_os("DLOCK_BLESS").is_some() {
            let updated = format!("{}{START}{expected}{}", &page[..start], &page[end..]);
            std::fs::write(path, updated).expect("write docs/commands.md");
        } else {
            panic!("docs/commands.md is stale; run DLOCK_BLESS=1 cargo test -p dlock commands_reference\nexpected:\n{expected}");
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
        // Every word outside brackets is required (`numkeys key [key ...] owner` needs three).
        let mut depth = 0i32;
        let mut fixed = 1;
        for word in c.usage.split_whitespace() {
            depth += word.matches('[').count() as i32;
            if depth == 0 {
                fixed += 1;
            }
            depth -= word.matches(']').count() as i32;
        }
        let expected = if c.usage.contains('[') { -fixed } else { fixed };
        assert_eq!(
            c.arity, expected,
            "{}: arity vs usage '{}'",
            c.name, c.usage
        );
        let first_key = match c.key {
            KeyUse::Keys | KeyUse::KeysDelete => c.args.get(1),
            _ => c.args.first(),
        };
        assert_eq!(
            c.key != KeyUse::None,
            first_key.is_some_and(|a| matches!(a.kind, ArgKind::Key | ArgKind::Keys)),
            "{}: key spec vs its first argument",
            c.name
        );
        // `key owner ttl-ms [REENTRANT] [PXAT unix-ms]`: each argument's token, or its name.
        let documented: Vec<String> = c
            .args
            .iter()
            .map(|a| match a.kind {
                ArgKind::Flag(token) | ArgKind::Option(token) | ArgKind::Text(token) => token,
                _ => a.name,
            })
            .map(|name| name.to_string_lossy().to_string())
            .collect();
        let used: Vec<String> = c
            .usage
            .split_whitespace()
            .filter(|w| !w.ends_with(']') || w.starts_with('['))
            .filter(|w| *w != "|") // `[SHARED | LIMIT k]`: alternatives, each documented
            .filter(|w| *w != "[key" && *w != "...]") // `key [key ...]`: one argument, multiple
            .map(|w| w.trim_matches(|ch| ch == '[' || ch == ']').to_string())
            .collect();
        assert_eq!(
            documented, used,
            "{}: COMMAND DOCS arguments vs usage",
            c.name
        );
    }
}
