//! The layering, checked: the top-level modules (`src/<name>.rs` or `src/<name>/`) of the module,
//! of the rules (`core/`) and of the model (`model/`) depend on each other without a cycle, so
//! each layer can be read and tested with only the layers below it in mind.
//! docs/architecture.md draws the same graphs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The top-level module a file belongs to: `src/keyspace/key.rs` is `keyspace`.
fn top_module(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative.components().next().expect("a file name");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The modules named by `crate::` paths in `text`, grouped imports (`crate::{a, b::c}`)
/// included and comments left out (a doc link is not a dependency).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            names.extend(group_heads(group));
        } else {
            names.insert(identifier(rest));
        }
    }
    names.remove("");
    names
}

/// The leading identifier of `text`.
fn identifier(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first segment of each item of a `{...}` group (`group` starts after the `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = vec![identifier(group)];
    let mut depth = 1;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => break,
            '}' => depth -= 1,
            ',' if depth == 1 => heads.push(identifier(&group[at + 1..])),
            _ => {}
        }
    }
    heads
}

/// Which top-level module of the crate in `crate_dir` uses which (the crate root, `lib` or
/// `main`, is left out; a `#[path]` test file counts as a module of its own).
fn module_graph(crate_dir: &str) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(crate_dir)
        .join("src");
    let mut graph = Graph::new();
    for file in sources(&src) {
        let module = top_module(&src, &file);
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let used = graph.entry(module.clone()).or_default();
        used.extend(crate_paths(&text).into_iter().filter(|m| *m != module));
    }
    graph
}

/// A cycle through `from`, if there is one: the path back to it.
fn cycle_from(graph: &Graph, from: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("a path is never empty");
        for next in graph.get(last).into_iter().flatten() {
            if next == from {
                return Some([path.clone(), vec![next.clone()]].concat());
            }
            if seen.insert(next.clone()) {
                stack.push([path.clone(), vec![next.clone()]].concat());
            }
        }
    }
    None
}

#[test]
fn top_level_modules_depend_on_each_other_without_a_cycle() {
    for crate_dir in [".", "core", "model"] {
        let graph = module_graph(crate_dir);
        assert!(
            graph.len() > 5,
            "{crate_dir}: the graph was not read: {graph:?}"
        );
        let cycles: Vec<String> = graph
            .keys()
            .filter_map(|m| cycle_from(&graph, m))
            .map(|cycle| cycle.join(" -> "))
            .collect();
        assert!(
            cycles.is_empty(),
            "{crate_dir}: import cycles:\n{}",
            cycles.join("\n")
        );
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_only_a_cycle() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    let acyclic = graph(&[("a", "b"), ("b", "c"), ("a", "c")]);
    assert_eq!(cycle_from(&acyclic, "a"), None);
    let cyclic = graph(&[("a", "b"), ("b", "c"), ("c", "a")]);
    assert_eq!(
        cycle_from(&cyclic, "b").map(|c| c.join(" -> ")),
        Some("b -> c -> a -> b".to_string())
    );
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        crate_paths("use crate::wire::Arg; // crate::config\n"),
        names(&["wire"])
    );
    assert_eq!(
        crate_paths("use crate::{config, node::{node, Node},\n    server};\nx(crate::api!(F));"),
        names(&["api", "config", "node", "server"])
    );
}
