//! File-by-file dependency graphs the file map's check needs besides the module-level ones of
//! architecture.rs: a Rust crate's files by their `crate::` / `super::` paths, and Go's files
//! by the names they use from another package of the module.

use std::collections::BTreeMap;
use std::path::Path;

use super::{files, identifier, Graph};

/// Which file of the Rust sources under `src` uses which (paths from `src`): every `crate::`
/// and `super::` path (grouped imports included; comments and inline test modules left out),
/// resolved to the deepest module file it names, so `transport/nodes.rs` uses
/// `transport/ack.rs` through `super::ack`.
pub fn rust_files(src: &Path) -> Graph {
    let relative = |f: &Path| {
        f.strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .into_owned()
    };
    let mut modules = BTreeMap::new();
    for file in files(src, ".rs") {
        let path = relative(&file);
        modules.insert(module_of(&path), path);
    }
    let mut graph = Graph::new();
    for (module, path) in &modules {
        let text = std::fs::read_to_string(src.join(path)).expect("read a source file");
        let code = without_comments_and_tests(&text);
        let parent = &module[..module.len().saturating_sub(1)];
        let mut used: Vec<Vec<String>> = paths_after(&code, "crate::");
        for mut tail in paths_after(&code, "super::") {
            let mut base = parent.to_vec();
            while tail.first().is_some_and(|s| s == "super") {
                tail.remove(0);
                base.pop();
            }
            used.push([base, tail].concat());
        }
        let files = graph.entry(path.clone()).or_default();
        for full in used {
            let deepest = (1..=full.len()).rev().find_map(|n| modules.get(&full[..n]));
            files.extend(deepest.filter(|f| *f != path).cloned());
        }
    }
    graph
}

/// `transport/nodes.rs` is `[transport, nodes]`, `transport/mod.rs` `[transport]`, `lib.rs` `[]`.
fn module_of(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// The code without `//` comments and without an inline `#[cfg(test)] mod ... {` and what
/// follows it (a file's unit tests come last).
fn without_comments_and_tests(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let next = lines.peek().map_or("", |l| l.trim());
        if line.trim() == "#[cfg(test)]" && next.contains("mod ") && next.ends_with('{') {
            break;
        }
        kept.push(line.find("//").map_or(line, |at| &line[..at]));
    }
    kept.join("\n")
}

/// Each path after `prefix` in `code` (not itself part of a longer path), as its segments; a
/// group (`{a, b::{c, d}}`) gives a path per item.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    code.match_indices(prefix)
        .filter(|(at, _)| {
            let before = code[..*at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .flat_map(|(at, _)| expand(&code[at + prefix.len()..]))
        .collect()
}

fn expand(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        return group_items(group).into_iter().flat_map(expand).collect();
    }
    let name = identifier(text);
    if name.is_empty() {
        return Vec::new();
    }
    let rest = &text.trim_start()[name.len()..];
    let tails = rest.strip_prefix("::").map(expand).unwrap_or_default();
    if tails.is_empty() {
        return vec![vec![name]];
    }
    tails
        .into_iter()
        .map(|tail| [vec![name.clone()], tail].concat())
        .collect()
}

/// The items of a `{...}` group, `group` starting after its `{`.
fn group_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 1, 0);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => {
                items.push(&group[start..at]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 1 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items
}

/// Which Go file under `root` uses which, counting only names used from another package of the
/// module (`transport.Failure` in the `dlock` package is transport/errors.go, where `Failure` is
/// declared). Test files are left out.
pub fn go_references(root: &Path) -> Graph {
    let mut sources = Vec::new();
    for file in files(root, ".go") {
        let path = file
            .strip_prefix(root)
            .expect("under go/")
            .to_string_lossy()
            .into_owned();
        if !path.ends_with("_test.go") {
            let code =
                without_go_comments_and_strings(&std::fs::read_to_string(&file).expect("read"));
            let package = identifier(code.split("package ").nth(1).unwrap_or_default());
            sources.push((path, package, code));
        }
    }
    let mut declared = BTreeMap::new();
    for (path, package, code) in &sources {
        for name in go_declarations(code) {
            declared.insert((package.clone(), name), path.clone());
        }
    }
    let mut graph = Graph::new();
    for (path, package, code) in &sources {
        let used = graph.entry(path.clone()).or_default();
        for (at, _) in code.match_indices('.') {
            let qualifier = identifier_before(&code[..at]);
            if !qualifier.is_empty() && qualifier != package.as_str() {
                let name = identifier(&code[at + 1..]);
                used.extend(declared.get(&(qualifier.to_string(), name)).cloned());
            }
        }
    }
    graph
}

/// The identifier that ends `text`, if it is not itself after a `.` (a field of a value).
fn identifier_before(text: &str) -> &str {
    let start = text
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |at| at + 1);
    match text[..start].chars().next_back() {
        Some('.') => "",
        _ => &text[start..],
    }
}

/// The names a Go file declares at the top level: `func Name(`, `type`, `var`, `const`, and
/// the names of `var (`, `const (` and `type (` blocks.
fn go_declarations(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_block = false;
    for line in code.lines() {
        if in_block {
            in_block = !line.starts_with(')');
            if let Some(entry) = line.strip_prefix('\t').filter(|l| !l.starts_with('\t')) {
                let before_value = entry.split('=').next().unwrap_or_default();
                names.extend(before_value.split(',').map(identifier));
            }
        } else if ["var (", "const (", "type ("].contains(&line.trim_end()) {
            in_block = true;
        } else if let Some(rest) = ["func ", "type ", "var ", "const "]
            .iter()
            .find_map(|k| line.strip_prefix(k))
        {
            names.push(identifier(rest));
        }
    }
    names.retain(|n| !n.is_empty() && n != "_");
    names
}

/// Go code with its comments and the contents of its strings and runes blanked out.
pub(super) fn without_go_comments_and_strings(text: &str) -> String {
    let (mut out, mut chars) = (String::new(), text.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                chars.by_ref().take_while(|c| *c != '\n').for_each(drop);
                out.push('\n');
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' | '\'' | '`' => {
                while let Some(inside) = chars.next() {
                    if inside == '\\' && c != '`' {
                        chars.next();
                    } else if inside == c {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_graph_readers_find_what_a_file_uses_and_nothing_else() {
    let code = "use super::{ack, server::Server};\nuse super::super::errors; // crate::nothing\n\
        fn f() { crate::timing::now(); x::crate::no(); }\n#[cfg(test)]\nmod tests {\n use crate::fake;\n}";
    let code = without_comments_and_tests(code);
    assert_eq!(
        paths_after(&code, "super::"),
        [
            vec!["ack"],
            vec!["server", "Server"],
            vec!["super", "errors"]
        ]
    );
    assert_eq!(paths_after(&code, "crate::"), [vec!["timing", "now"]]);
    assert_eq!(module_of("transport/mod.rs"), ["transport"]);
    let go = "package dlock\n\nimport \"x\"\n\n// transport.Comment\nconst (\n\tA, B = 1, 2\n)\n\
        type T struct{ f transport.Failure }\nfunc New() {}\nfunc (t T) M() { _ = \"transport.Str\"; t.transport.Conn() }\n";
    let code = without_go_comments_and_strings(go);
    assert_eq!(go_declarations(&code), ["A", "B", "T", "New"]);
    assert!(
        !code.contains("Comment") && !code.contains("transport.Str"),
        "{code}"
    );
    assert_eq!(identifier_before("{ f transport"), "transport");
    assert_eq!(
        identifier_before("t.transport"),
        "",
        "a field, not a package"
    );
}
