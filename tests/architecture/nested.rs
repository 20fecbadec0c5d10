//! The layering of a crate laid out in folders (the partition and chaos suites): every file is
//! a module of its own (`src/topology/nodes.rs` is `topology::nodes`, a `mod.rs` its folder's
//! module, `x_tests.rs` the `tests` module inside `x`), and each file's uses are read from
//! `crate::`, `super::`, `self::` and child-module paths, grouped imports expanded. The graph
//! is checked at every depth: files, and folders as wholes, so a cycle between two files of a
//! folder and one between two folders both fail.

use std::collections::BTreeSet;
use std::path::Path;

use super::{cycle_from, sources, Graph};

/// The crate root (`lib.rs`, `main.rs`): a node too, so a module using an item of a binary's
/// `main.rs` that itself uses the module is a cycle.
const ROOT: &str = "crate";

/// A file's module path, as segments (empty for the crate root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let root = parts.is_empty() && (last == "lib" || last == "main");
    match last.strip_suffix("_tests") {
        _ if root || last == "mod" => {}
        // A unit-test file is declared with #[path] inside the file it tests.
        Some(tested) => parts.extend([tested.to_string(), "tests".to_string()]),
        None => parts.push(last),
    }
    parts
}

fn name(path: &[String]) -> String {
    if path.is_empty() {
        ROOT.to_string()
    } else {
        path.join("::")
    }
}

/// `text` without its comments (a doc link is not a dependency) and with its string and
/// character literals blanked (a URL's `//` is no comment, a `{` in a string no block).
fn code(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    while at < s.len() {
        let next = s.get(at + 1).copied();
        match s[at] {
            '/' if next == Some('/') => {
                while at < s.len() && s[at] != '\n' {
                    at += 1;
                }
            }
            '/' if next == Some('*') => {
                at += 2;
                while at < s.len() && !(s[at] == '*' && s.get(at + 1) == Some(&'/')) {
                    at += 1;
                }
                at += 2;
            }
            '"' => at = skip_string(&s, at, 0, &mut out),
            'r' if (next == Some('"') || next == Some('#'))
                && !s[..at].last().is_some_and(|c| is_ident(*c)) =>
            {
                let hashes = s[at + 1..].iter().take_while(|c| **c == '#').count();
                if s.get(at + 1 + hashes) == Some(&'"') {
                    at = skip_string(&s, at + 1 + hashes, hashes, &mut out);
                } else {
                    out.push('r');
                    at += 1;
                }
            }
            // A character literal ('{', '\''); a lifetime ('a) is kept.
            '\'' if next == Some('\\') || s.get(at + 2) == Some(&'\'') => {
                at += 1;
                while at < s.len() && s[at] != '\'' {
                    at += if s[at] == '\\' { 2 } else { 1 };
                }
                at += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c);
                at += 1;
            }
        }
    }
    out
}

/// Past the string whose opening quote is at `at` (closed by a quote and `hashes` #s), its
/// contents left out of `out`; where it ends.
fn skip_string(s: &[char], mut at: usize, hashes: usize, out: &mut String) -> usize {
    at += 1;
    while at < s.len() {
        let closes = s[at] == '"'
            && s[at + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes;
        if closes {
            out.push_str("\"\"");
            return at + 1 + hashes;
        }
        at += if s[at] == '\\' && hashes == 0 { 2 } else { 1 };
    }
    at
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths one use tree or path names, from its start: `a::{b, c::{d, e}}` is `a::b`,
/// `a::c::d` and `a::c::e` (`self`, `*` and renames end a path where they stand).
pub(super) fn tree_paths(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    parse_tree(&chars, &mut at)
}

fn parse_tree(s: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    loop {
        skip_space(s, at);
        if s.get(*at) == Some(&'{') {
            *at += 1;
            return parse_group(s, at)
                .into_iter()
                .map(|tail| [prefix.clone(), tail].concat())
                .collect();
        }
        let start = *at;
        // A glob (`super::*`) is a segment of its own: a path of one keyword is not a use.
        let glob = s.get(*at) == Some(&'*');
        while s.get(*at).is_some_and(|c| is_ident(*c)) || (glob && *at == start) {
            *at += 1;
        }
        if *at == start {
            return vec![prefix];
        }
        prefix.push(s[start..*at].iter().collect());
        skip_space(s, at);
        if s.get(*at..*at + 2) != Some(&[':', ':']) {
            return vec![prefix];
        }
        *at += 2;
    }
}

/// The items of a `{...}` group, `at` just after its `{`; leaves `at` after its `}`.
fn parse_group(s: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    while *at < s.len() {
        paths.extend(parse_tree(s, at));
        // Past what ends the item: `as name`, `*`, then its comma or the group's end.
        while let Some(c) = s.get(*at) {
            *at += 1;
            match c {
                ',' => break,
                '}' => return paths,
                _ => {}
            }
        }
    }
    paths
}

fn skip_space(s: &[char], at: &mut usize) {
    while s.get(*at).is_some_and(|c| c.is_whitespace()) {
        *at += 1;
    }
}

/// Every path in `code` that starts with `crate`, `super`, `self` or a child module of `here`,
/// made absolute (segments from the crate root). A tree is read once, from its start: an item
/// of `crate::a::{b::c}` is not read again as a path `b::c` of its own.
fn absolute_paths(code: &str, here: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let s: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut inline = Inline::default();
    let mut at = 0;
    while at < s.len() {
        let previous = at.checked_sub(1).map_or(' ', |p| s[p]);
        if !is_ident(s[at]) || is_ident(previous) || previous == ':' || previous == '.' {
            inline.punctuation(s[at]);
            at += 1;
            continue;
        }
        let start = at;
        let paths = parse_tree(&s, &mut at);
        at = at.max(start + 1);
        inline.word(&paths);
        if s.get(at) == Some(&'!') {
            // A macro (`crate::api!`): an exported one lives at the crate root whichever module
            // defines it, so its path says nothing of the module used.
            continue;
        }
        let scope = [here, &inline.names()].concat();
        for path in paths.into_iter().filter(|p| p.len() > 1) {
            found.extend(absolute(&path, &scope, children));
        }
    }
    found
}

/// The inline modules (`mod tests { ... }`) open at a point of a file: a path inside one starts
/// from it (`super` there is the file's module).
#[derive(Default)]
struct Inline {
    /// Each open one's name and the brace depth it opened at.
    open: Vec<(String, usize)>,
    depth: usize,
    /// `mod` was the last word; then the name that followed it, until its `{`.
    after_mod: bool,
    named: Option<String>,
}

impl Inline {
    fn punctuation(&mut self, c: char) {
        match c {
            '{' => {
                self.depth += 1;
                if let Some(name) = self.named.take() {
                    self.open.push((name, self.depth));
                }
            }
            '}' => {
                if self.open.last().is_some_and(|(_, d)| *d == self.depth) {
                    self.open.pop();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            c if c.is_whitespace() => return,
            _ => {}
        }
        (self.after_mod, self.named) = (false, None);
    }

    fn word(&mut self, paths: &[Vec<String>]) {
        let word = match paths {
            [path] if path.len() == 1 => Some(path[0].as_str()),
            _ => None,
        };
        self.named = word.filter(|_| self.after_mod).map(String::from);
        self.after_mod = word == Some("mod");
    }

    fn names(&self) -> Vec<String> {
        self.open.iter().map(|(name, _)| name.clone()).collect()
    }
}

/// `path`, read in module `here`, from the crate root; `None` if it is not this crate's (an
/// external crate's, a local name's).
fn absolute(path: &[String], here: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let first = path[0].as_str();
    match first {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([here, &path[1..]].concat()),
        "super" => {
            let ups = path.iter().take_while(|p| *p == "super").count();
            let base = &here[..here.len().checked_sub(ups)?];
            Some([base, &path[ups..]].concat())
        }
        _ if children.contains(first) => Some([here, path].concat()),
        _ => None,
    }
}

/// The module a path lands in: its longest prefix that is a module (the root if none is).
fn landing(path: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
        .unwrap_or_default()
}

/// Which module of the crate whose sources are `src` uses which, one node per file.
pub(super) fn file_graph(src: &Path) -> Graph {
    let files: Vec<_> = sources(src)
        .into_iter()
        .map(|f| (module_of(src, &f), f))
        .collect();
    let mut modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    modules.insert(Vec::new());
    let mut graph = Graph::new();
    for (here, file) in &files {
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|m| m.len() == here.len() + 1 && m.starts_with(here))
            .map(|m| m[here.len()].clone())
            .collect();
        let text = std::fs::read_to_string(file).expect("read a source file");
        let used = graph.entry(name(here)).or_default();
        for path in absolute_paths(&code(&text), here, &children) {
            let target = landing(&path, &modules);
            if &target != here {
                used.insert(name(&target));
            }
        }
    }
    graph
}

/// `graph` with every module folded into its ancestor `depth` segments deep (depth 1: the
/// top-level modules and folders), edges inside one fold dropped.
pub(super) fn folded(graph: &Graph, depth: usize) -> Graph {
    let fold = |m: &str| m.split("::").take(depth).collect::<Vec<_>>().join("::");
    let mut out = Graph::new();
    for (from, to) in graph {
        let used = out.entry(fold(from)).or_default();
        used.extend(to.iter().map(|t| fold(t)).filter(|t| *t != fold(from)));
    }
    out
}

/// Every cycle of the graph, at every depth, as `a -> b -> a` lines.
pub(super) fn cycles_at_every_depth(graph: &Graph) -> Vec<String> {
    let deepest = graph.keys().map(|m| m.split("::").count()).max();
    let mut cycles = BTreeSet::new();
    for depth in 1..=deepest.unwrap_or(0) {
        let g = folded(graph, depth);
        cycles.extend(
            g.keys()
                .filter_map(|m| cycle_from(&g, m))
                .map(|c| c.join(" -> ")),
        );
    }
    cycles.into_iter().collect()
}

/// Fails naming every cycle of the crate under `src` (`what` names it), between files or
/// between folders.
pub(super) fn assert_layered(src: &Path, what: &str) {
    let graph = file_graph(src);
    assert!(
        graph.len() > 5,
        "the graph of {what} was not read: {graph:?}"
    );
    let cycles = cycles_at_every_depth(&graph);
    assert!(
        cycles.is_empty(),
        "import cycles in {what} (files, or folders as wholes):\n{}",
        cycles.join("\n")
    );
}

#[cfg(test)]
#[path = "nested_tests.rs"]
mod tests;
