//! The layering, checked: no import cycle, so each layer can be read and tested with only the
//! layers below it in mind. For the module, the rules (`core/`), the model (`model/`) and the Rust
//! client, their top-level modules (`src/<name>.rs` or `src/<name>/`) by `crate::` paths; for the
//! Python and Node clients, their files by relative imports. docs/architecture.md and
//! docs/internals/module.md draw the graphs. The clients' one file map (docs/internals/file-map.md)
//! is checked in file_map.rs, with the file-level graphs of graphs.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod dependencies;
mod file_map;
mod graphs;
mod java;
mod listing;
mod nested;
mod paths;

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

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Which top-level module of the crate whose sources are `src` uses which (the crate root, `lib`
/// or `main`, is left out; a `#[path]` test file counts as a module of its own).
fn module_graph(src: &Path) -> Graph {
    let src = src.to_path_buf();
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

/// Every file under `dir` whose name ends with `ext`.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)
        .expect("read a source folder")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path, ext));
        } else if path.to_string_lossy().ends_with(ext) {
            found.push(path);
        }
    }
    found
}

/// A Python package's modules (`a.b` for `a/b.py`, `a` for `a/__init__.py`) and the modules of
/// the package each imports relatively (`from .x import y`, `from .. import x`).
fn python_graph(package: &Path) -> Graph {
    let module_of = |file: &Path| {
        let relative = file.strip_prefix(package).expect("under the package");
        let mut parts: Vec<String> = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let init = parts.last().is_some_and(|p| p == "__init__");
        if init {
            parts.pop();
        }
        (parts, init)
    };
    let sources = files(package, ".py");
    let modules: BTreeSet<String> = sources.iter().map(|f| module_of(f).0.join(".")).collect();
    let mut graph = Graph::new();
    for file in &sources {
        let (parts, init) = module_of(file);
        let here = if init {
            parts.clone()
        } else {
            parts[..parts.len() - 1].to_vec()
        };
        let text = std::fs::read_to_string(file).expect("read a source file");
        let used = graph.entry(parts.join(".")).or_default();
        for line in text.lines().map(str::trim_start) {
            used.extend(python_imports(line, &here, &modules));
        }
        used.remove(&parts.join("."));
    }
    graph
}

/// The package's modules one line imports relatively, `here` being the importing package.
fn python_imports(line: &str, here: &[String], modules: &BTreeSet<String>) -> Vec<String> {
    let Some(rest) = line.strip_prefix("from .") else {
        return Vec::new();
    };
    let Some((from, names)) = rest.split_once(" import ") else {
        return Vec::new();
    };
    let ups = from.chars().take_while(|c| *c == '.').count();
    let mut base: Vec<String> = here[..here.len().saturating_sub(ups)].to_vec();
    base.extend(
        from[ups..]
            .split('.')
            .filter(|p| !p.is_empty())
            .map(String::from),
    );
    let target = base.join(".");
    // `from . import x, y as z`: the submodules named, where they are modules.
    let submodules: Vec<String> = names
        .trim_matches(['(', ')', ' '])
        .split(',')
        .filter_map(|name| name.split_whitespace().next())
        .map(|name| [base.clone(), vec![name.to_string()]].concat().join("."))
        .filter(|module| modules.contains(module))
        .collect();
    if submodules.is_empty() {
        vec![target]
    } else {
        submodules
    }
}

/// A TypeScript tree's files (paths without `.ts`) and the files each imports or re-exports
/// from (`from "./x.js"`, `import "./x.js"`), type-only imports included.
fn typescript_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for file in files(src, ".ts") {
        let id = |path: &Path| path.with_extension("").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let dir = file.parent().expect("a folder");
        let used = graph
            .entry(id(file.strip_prefix(src).expect("under src")))
            .or_default();
        for quoted in text
            .split("from \"")
            .skip(1)
            .chain(text.split("import \"").skip(1))
        {
            let Some(target) = quoted.split('"').next().filter(|t| t.starts_with('.')) else {
                continue;
            };
            let resolved = normalize(&dir.join(target.trim_end_matches(".js")));
            if let Ok(inside) = resolved.strip_prefix(src) {
                used.insert(id(inside));
            }
        }
    }
    graph
}

/// `path` with its `.` and `..` components resolved (without touching the file system).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Fails naming every cycle of `graph` (read from `what`).
fn assert_acyclic(graph: &Graph, what: &str) {
    assert!(
        graph.len() > 5,
        "the graph of {what} was not read: {graph:?}"
    );
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_from(graph, m))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "import cycles in {what}:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn top_level_modules_depend_on_each_other_without_a_cycle() {
    assert_acyclic(&module_graph(&repo("src")), "src/");
}

#[test]
fn the_rules_and_the_model_depend_on_their_modules_without_a_cycle() {
    assert_acyclic(&module_graph(&repo("core/src")), "core/src/");
    assert_acyclic(&module_graph(&repo("model/src")), "model/src/");
}

#[test]
fn the_rust_clients_top_level_modules_depend_on_each_other_without_a_cycle() {
    assert_acyclic(&module_graph(&repo("client/src")), "client/src/");
}

/// The suites are laid out in folders by concern; each file is checked, and each folder as a
/// whole (tests/architecture/nested.rs).
#[test]
fn the_partition_suites_files_and_folders_depend_on_each_other_without_a_cycle() {
    nested::assert_layered(&repo("partitions/src"), "partitions/src/");
}

#[test]
fn the_chaos_suites_files_and_folders_depend_on_each_other_without_a_cycle() {
    nested::assert_layered(&repo("chaos/src"), "chaos/src/");
}

#[test]
fn the_python_clients_modules_import_each_other_without_a_cycle() {
    assert_acyclic(
        &python_graph(&repo("python/src/dlock")),
        "python/src/dlock/",
    );
}

#[test]
fn the_node_clients_files_import_each_other_without_a_cycle() {
    assert_acyclic(&typescript_graph(&repo("node/src")), "node/src/");
}

/// The pages that name the project's files: the architecture, the module file by file, the
/// clients' one file map, and the suites file by file.
const ARCHITECTURE_PAGES: [&str; 4] = [
    "docs/architecture.md",
    "docs/internals/module.md",
    "docs/internals/file-map.md",
    "docs/internals/suites.md",
];

/// The source folders the architecture pages list file by file (the module's files:
/// docs/internals/module.md; the clients': docs/architecture.md or the clients' file map,
/// docs/internals/file-map.md), and each one's extension.
const LISTED: [(&str, &str); 11] = [
    ("src", ".rs"),
    ("core/src", ".rs"),
    ("model/src", ".rs"),
    ("client/src", ".rs"),
    ("cli/src", ".rs"),
    ("testkit/src", ".rs"),
    ("python/src/dlock", ".py"),
    ("node/src", ".ts"),
    ("go", ".go"),
    ("partitions/src", ".rs"),
    ("chaos/src", ".rs"),
];

/// Files a list need not name: entry points every crate or package has, and unit tests that sit
/// beside the file they test (`x_tests.rs` for `x.rs`, Go's `_test.go`).
fn needs_no_line(name: &str) -> bool {
    matches!(
        name,
        "mod.rs" | "lib.rs" | "main.rs" | "__init__.py" | "py.typed"
    ) || name.ends_with("_tests.rs")
        || name.ends_with("_test.go")
}

#[test]
fn architecture_md_names_every_source_file() {
    let read = |page: &str| std::fs::read_to_string(repo(page)).expect(page);
    let doc = ARCHITECTURE_PAGES
        .iter()
        .map(|page| read(page))
        .collect::<String>();
    let mut missing = Vec::new();
    for (dir, ext) in LISTED {
        for file in files(&repo(dir), ext) {
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            // In its own folder's listing, where the doc has one (listing.rs).
            let relative = file.strip_prefix(repo(dir)).unwrap_or(&file);
            let text = listing::scope(&doc, dir, relative);
            let named = text.match_indices(&name).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if !needs_no_line(&name) && !named {
                missing.push(
                    file.strip_prefix(repo(""))
                        .unwrap_or(&file)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md (or docs/internals/module.md, file-map.md, suites.md) does not name \
         these files (add a line saying what each is for):\n{}",
        missing.join("\n")
    );
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
    let modules = names(&["_pure.ack", "_pure.kind", "errors"]);
    let here = ["_pure".to_string()];
    assert_eq!(
        python_imports("from . import ack as _ack", &here, &modules),
        ["_pure.ack"]
    );
    assert_eq!(
        python_imports("from ..errors import NodeFailure", &here, &modules),
        ["errors"]
    );
    assert_eq!(
        python_imports("from .kind import Kind, EXCLUSIVE", &here, &modules),
        ["_pure.kind"]
    );
    assert!(python_imports("from redis import Redis", &here, &modules).is_empty());
    assert_eq!(
        normalize(Path::new("/a/b/../c/./d")),
        PathBuf::from("/a/c/d")
    );
}

/// What only the key layer may name: the storage forms' modules, types and data types.
const FORM_NAMES: [&str; 14] = [
    "keyspace::compact",
    "keyspace::table",
    "keyspace::form",
    "keyspace::values",
    "keyspace::types",
    "HolderTable",
    "CompactRef",
    "CompactMut",
    "OwnedCompact",
    "Value::Compact",
    "Value::Table",
    "Stored::",
    "LOCK_TYPE",
    "TABLE_TYPE",
];

#[test]
fn no_file_above_the_key_layer_names_a_storage_form() {
    let keyspace = repo("src/keyspace");
    let mut named = Vec::new();
    for file in sources(&repo("src")) {
        if file.starts_with(&keyspace) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        for name in FORM_NAMES.iter().filter(|n| text.contains(**n)) {
            named.push(format!("{}: {name}", file.display()));
        }
    }
    assert!(
        named.is_empty(),
        "storage forms named above src/keyspace:\n{}",
        named.join("\n")
    );
}
