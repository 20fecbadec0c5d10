//! The layering, checked: no import cycle, so each layer can be read and tested with only the
//! layers below it in mind. For the module, the rules (`core/`), the model (`model/`) and the
//! Rust client, their top-level modules (`src/<name>.rs` or `src/<name>/`) by `crate::` paths;
//! for the Python and Node clients, their files by relative imports. docs/architecture.md draws
//! the graphs. The clients' one file map (docs/internals/file-map.md) is checked in file_map.rs,
//! with the file-level graphs of graphs.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod file_map;
mod graphs;
mod listing;
mod nested;

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

/// The pages that name the project's files: the architecture, the clients' one file map, and
/// the suites file by file.
const ARCHITECTURE_PAGES: [&str; 3] = [
    "docs/architecture.md",
    "docs/internals/file-map.md",
    "docs/internals/suites.md",
];

/// The source folders docs/architecture.md lists file by file (the clients' files: it or the
/// clients' file map, docs/internals/file-map.md), and each one's extension.
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
        "docs/architecture.md (or docs/internals/file-map.md, docs/internals/suites.md) does not name \
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

/// Which file of one module folder (`src/keyspace`, reached as `crate::keyspace`) uses which
/// other, by `super::` and `crate::<folder>::` paths; tests and comments left out.
fn folder_graph(dir: &Path, folder: &str) -> Graph {
    let mut graph = Graph::new();
    for file in sources(dir) {
        let name = file.file_stem().expect("a file name").to_string_lossy();
        if name.ends_with("_tests") || name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let code = code
            .replace("super::", "crate::")
            .replace(&format!("crate::{folder}::"), "crate::");
        let siblings = crate_paths(&code)
            .into_iter()
            .filter(|m| *m != name && dir.join(format!("{m}.rs")).exists());
        graph.entry(name.to_string()).or_default().extend(siblings);
    }
    graph
}

/// Fails naming every cycle of a folder's graph.
fn assert_folder_acyclic(graph: &Graph, what: &str) {
    assert!(
        graph.len() > 1,
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

/// The module's files, each a module, and each folder also as a whole (tests/architecture/
/// nested.rs): a folder's `mod.rs` uses its files, never the other way.
#[test]
fn the_modules_files_and_folders_depend_on_each_other_without_a_cycle() {
    nested::assert_layered(&repo("src"), "src/");
}

#[test]
fn the_files_of_each_module_folder_depend_on_each_other_without_a_cycle() {
    for folder in ["keyspace", "commands", "waiting", "replication", "wire"] {
        let dir = repo("src").join(folder);
        assert_folder_acyclic(&folder_graph(&dir, folder), &format!("src/{folder}/"));
    }
}

#[test]
fn the_folder_graph_sees_a_cycle_through_super_paths() {
    let dir = std::env::temp_dir().join(format!("dlock-arch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.rs"), "use super::b::B;\n").unwrap();
    std::fs::write(dir.join("b.rs"), "pub fn f() { crate::keyspace::a::g() }\n").unwrap();
    std::fs::write(
        dir.join("c.rs"),
        "// super::a is only a comment\nuse super::b;\n",
    )
    .unwrap();
    let graph = folder_graph(&dir, "keyspace");
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(cycle_from(&graph, "a").is_some(), "{graph:?}");
    assert!(cycle_from(&graph, "c").is_none(), "{graph:?}");
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

// --- docs/architecture.md's dependency table and file names, checked against the tree -------

/// Where a manifest's dependencies are read: folders walked for them and every file listing,
/// skipped (builds, installs, caches).
const NOT_SOURCES: [&str; 10] = [
    "target",
    ".git",
    "node_modules",
    ".venv",
    "__pycache__",
    "dist",
    "build",
    "build-test",
    ".compat",
    ".mypy_cache",
];

/// Every file (relative, `/`-separated) and every folder of the repository, what
/// [`NOT_SOURCES`] names left out.
fn tree() -> (BTreeSet<String>, BTreeSet<String>) {
    fn walk(dir: &Path, root: &Path, files: &mut BTreeSet<String>, dirs: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).expect("read a folder").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = path.strip_prefix(root).expect("under the root");
            let relative = relative.to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                if !NOT_SOURCES.contains(&name.as_str()) {
                    dirs.insert(relative);
                    walk(&path, root, files, dirs);
                }
            } else {
                files.insert(relative);
            }
        }
    }
    let (mut files, mut dirs) = (BTreeSet::new(), BTreeSet::new());
    walk(&repo(""), &repo(""), &mut files, &mut dirs);
    (files, dirs)
}

/// A manifest's direct dependencies: (what it needs to build and run, what only its tests,
/// examples or build tools need).
type Deps = (BTreeSet<String>, BTreeSet<String>);

/// A Cargo.toml's dependencies by name: `[dependencies]`, `[build-dependencies]` and
/// `[target.'...'.dependencies]` first, `[dev-dependencies]` second (`[workspace.dependencies]`
/// only declares versions). Keys at the start of a line, dotted (`x.workspace = true`) or not.
fn cargo_deps(text: &str) -> Deps {
    let mut deps: Deps = Default::default();
    let mut section = 0; // 0: not a dependency table, 1: runtime, 2: dev
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            section = if header.starts_with("workspace") {
                0
            } else if header == "dev-dependencies" {
                2
            } else if header.ends_with("dependencies") {
                1
            } else if let Some(name) = header
                .strip_prefix("dependencies.")
                .or_else(|| header.strip_prefix("build-dependencies."))
            {
                deps.0.insert(name.to_string());
                0
            } else if let Some(name) = header.strip_prefix("dev-dependencies.") {
                deps.1.insert(name.to_string());
                0
            } else {
                0
            };
            continue;
        }
        let key: String = line
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        let rest = line[key.len()..].trim_start();
        if section > 0 && !key.is_empty() && (rest.starts_with('=') || rest.starts_with('.')) {
            if section == 1 {
                &mut deps.0
            } else {
                &mut deps.1
            }
            .insert(key);
        }
    }
    deps
}

/// The quoted strings of a TOML array that starts on `line` (it may go on over later lines).
fn toml_strings<'a>(lines: &mut impl Iterator<Item = &'a str>, line: &'a str) -> Vec<String> {
    let mut text = line.to_string();
    while !text.contains(']') {
        match lines.next() {
            Some(next) => text += next,
            None => break,
        }
    }
    text.split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// pyproject.toml: `[project] dependencies` first; `[build-system] requires` and
/// `[project.optional-dependencies]` second. A requirement's name is what precedes its version.
fn python_deps(text: &str) -> Deps {
    let name = |req: &str| -> String {
        req.chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect()
    };
    let mut deps: Deps = Default::default();
    let mut section = "";
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with('[') {
            section = line.trim();
            continue;
        }
        let key = line.split('=').next().unwrap_or("").trim();
        let runtime = section == "[project]" && key == "dependencies";
        let tools = (section == "[build-system]" && key == "requires")
            || (section == "[project.optional-dependencies]" && line.contains('='));
        if runtime || tools {
            let found: Vec<String> = toml_strings(&mut lines, line)
                .iter()
                .map(|r| name(r))
                .collect();
            if runtime { &mut deps.0 } else { &mut deps.1 }.extend(found);
        }
    }
    deps
}

/// package.json: `dependencies` and `peerDependencies` first, `devDependencies` second (one
/// key per line, as npm writes it).
fn node_deps(text: &str) -> Deps {
    let mut deps: Deps = Default::default();
    let mut section = 0;
    for line in text.lines().map(str::trim) {
        if line.starts_with('}') {
            section = 0;
        } else if line.starts_with("\"dependencies\"") || line.starts_with("\"peerDependencies\"") {
            section = 1;
        } else if line.starts_with("\"devDependencies\"") {
            section = 2;
        } else if section > 0 {
            let name = line.split('"').nth(1).unwrap_or("").to_string();
            if section == 1 {
                &mut deps.0
            } else {
                &mut deps.1
            }
            .insert(name);
        }
    }
    deps
}

/// go.mod: the modules required directly (`// indirect` ones left out).
fn go_deps(text: &str) -> Deps {
    let mut deps: Deps = Default::default();
    let mut block = false;
    for line in text.lines().map(str::trim) {
        let required = if line == "require (" {
            block = true;
            continue;
        } else if block && line == ")" {
            block = false;
            continue;
        } else if block {
            line
        } else if let Some(one) = line.strip_prefix("require ") {
            one
        } else {
            continue;
        };
        if !required.is_empty() && !required.starts_with("//") && !required.contains("// indirect")
        {
            deps.0
                .insert(required.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    deps
}

/// The manifests the dependency table must list, and how each is read: every Cargo.toml of the
/// repository (the workspace's crates and the fuzz crate's own workspace), and the Python, Node
/// and Go clients' manifests.
fn manifests(files: &BTreeSet<String>) -> BTreeMap<String, Deps> {
    let mut found = BTreeMap::new();
    for file in files {
        let read = || std::fs::read_to_string(repo(file)).expect("read a manifest");
        let deps = match file.as_str() {
            f if f == "Cargo.toml" || f.ends_with("/Cargo.toml") => cargo_deps(&read()),
            "python/pyproject.toml" => python_deps(&read()),
            "node/package.json" => node_deps(&read()),
            "go/go.mod" => go_deps(&read()),
            _ => continue,
        };
        found.insert(file.clone(), deps);
    }
    found
}

/// The part of docs/architecture.md from `heading` to the next heading of its level.
fn doc_section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/architecture.md has no {heading:?}"));
    let body = &doc[start + heading.len() + 2..];
    let level = heading.split(' ').next().expect("a heading");
    let end = body.find(&format!("\n{level} ")).unwrap_or(body.len());
    &body[..end]
}

/// The names in backquotes of `cell`.
fn quoted(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// The dependency table of docs/architecture.md: manifest -> (its first column's names, its
/// second's).
fn dependency_table(doc: &str) -> BTreeMap<String, Deps> {
    let mut table = BTreeMap::new();
    for row in doc_section(doc, "## Dependencies").lines() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | `manifest` (what it is) | dependencies | for its tests and tools only |
        if cells.len() != 5 || !cells[1].starts_with('`') {
            continue;
        }
        let manifest = cells[1].split('`').nth(1).expect("a manifest").to_string();
        table.insert(manifest, (quoted(cells[2]), quoted(cells[3])));
    }
    table
}

#[test]
fn architecture_md_lists_every_dependency_and_only_real_ones() {
    let doc = std::fs::read_to_string(repo("docs/architecture.md")).expect("architecture.md");
    let table = dependency_table(&doc);
    let real = manifests(&tree().0);
    assert!(
        real.len() >= 13 && real.contains_key("client/Cargo.toml"),
        "the manifests were not found: {:?}",
        real.keys()
    );
    let mut wrong = Vec::new();
    for (manifest, (deps, tools)) in &real {
        let Some((listed, listed_tools)) = table.get(manifest) else {
            wrong.push(format!("{manifest}: no row in the table"));
            continue;
        };
        for (what, actual, said) in [
            ("", deps, listed),
            ("tests' and tools' ", tools, listed_tools),
        ] {
            for missing in actual.difference(said) {
                wrong.push(format!(
                    "{manifest}: its {what}dependency `{missing}` is not listed"
                ));
            }
            for extra in said.difference(actual) {
                wrong.push(format!("{manifest}: `{extra}` is listed among its {what}dependencies, but it has none of that name"));
            }
        }
    }
    for manifest in table.keys().filter(|m| !real.contains_key(*m)) {
        wrong.push(format!(
            "{manifest}: a row for a manifest that does not exist"
        ));
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md, \"Dependencies\", disagrees with the manifests:\n{}",
        wrong.join("\n")
    );
}

/// Words of docs/architecture.md that look like paths but name no file: a placeholder, a name.
const NOT_FILES: [&str; 3] = ["client/examples/F.rs", "Node.js", "_transport/*/x.py"];

/// What ends a file name the doc may name (a word like `e.g.` or `0.4` is not one).
const FILE_ENDINGS: [&str; 16] = [
    ".rs", ".py", ".ts", ".go", ".sh", ".json", ".yml", ".yaml", ".lua", ".toml", ".md", ".mjs",
    ".js", ".txt", ".c", ".example",
];

/// The words of `text` that name a file (`x.rs`, `a/b/x.py`, `_transport/*/nodes.py`,
/// `examples/{a,b}/main.go`) or a folder (`commands/`, `client/examples/`).
fn named_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut word = String::new();
    let mut braces = 0;
    for c in text.chars().chain(std::iter::once(' ')) {
        let inside = c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '*' | '{' | '}');
        if inside || (c == ',' && braces > 0) {
            braces += i32::from(c == '{') - i32::from(c == '}');
            word.push(c);
            continue;
        }
        let path = word.trim_end_matches(['.', ',']).trim_start_matches("../");
        let named_file = FILE_ENDINGS.iter().any(|e| path.ends_with(e))
            && !path.starts_with('.')
            && !path.contains("/.");
        let named_dir = path.ends_with('/') && path.len() > 1;
        if (named_file || named_dir)
            && !path.contains("//")
            && path
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            found.insert(path.to_string());
        }
        word.clear();
        braces = 0;
    }
    found
}

/// `pattern` with its `{a,b}` alternatives spelled out (one group at a time).
fn expand_braces(pattern: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}')) else {
        return vec![pattern.to_string()];
    };
    pattern[open + 1..close]
        .split(',')
        .flat_map(|alt| {
            expand_braces(&format!(
                "{}{alt}{}",
                &pattern[..open],
                &pattern[close + 1..]
            ))
        })
        .collect()
}

/// Whether one path component matches a pattern component, `*` standing for any run of
/// characters.
fn component_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.starts_with(head)
                && (head.len()..=name.len()).any(|at| component_matches(tail, &name[at..]))
        }
    }
}

/// Whether some path of `paths` ends with `pattern`, component by component.
fn some_path_ends_with(paths: &BTreeSet<String>, pattern: &str) -> bool {
    let wanted: Vec<&str> = pattern.split('/').collect();
    paths.iter().any(|path| {
        let parts: Vec<&str> = path.split('/').collect();
        parts.len() >= wanted.len()
            && wanted
                .iter()
                .zip(&parts[parts.len() - wanted.len()..])
                .all(|(w, p)| component_matches(w, p))
    })
}

#[test]
fn every_file_architecture_md_names_exists() {
    let read = |page: &str| std::fs::read_to_string(repo(page)).expect(page);
    let doc = ARCHITECTURE_PAGES
        .iter()
        .map(|page| read(page))
        .collect::<String>();
    let (files, dirs) = tree();
    let named = named_paths(&doc);
    assert!(
        named.len() > 200,
        "the doc's paths were not read: {named:?}"
    );
    let stale: Vec<String> = named
        .into_iter()
        .filter(|name| !NOT_FILES.contains(&name.as_str()))
        .filter(|name| {
            !expand_braces(name)
                .iter()
                .all(|path| match path.strip_suffix('/') {
                    Some(dir) => some_path_ends_with(&dirs, dir),
                    None => some_path_ends_with(&files, path),
                })
        })
        .collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md or docs/internals/ names files or folders that are not in the tree (renamed? removed?):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_manifest_and_path_readers_read_what_they_should() {
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let cargo = "[package]\nname = \"x\"\n[dependencies]\na = \"1\"\nb = { path = \"b\", features = [\n  \"f\",\n] }\n\
                 c.workspace = true\n# d = \"1\"\n[dev-dependencies]\ne = \"1\"\n[dependencies.f]\nversion = \"1\"\n\
                 [workspace.dependencies]\ng = \"1\"\n[target.'cfg(unix)'.dependencies]\nh = \"1\"\n";
    assert_eq!(
        cargo_deps(cargo),
        (names(&["a", "b", "c", "f", "h"]), names(&["e"]))
    );
    let py = "[build-system]\nrequires = [\"setuptools>=61\"]\n[project]\nname = \"x\"\ndependencies = [\n  \"redis>=5.0\",\n  \"typing_extensions\",\n]\n";
    assert_eq!(
        python_deps(py),
        (
            names(&["redis", "typing_extensions"]),
            names(&["setuptools"])
        )
    );
    let node = "{\n  \"scripts\": {\n    \"build\": \"tsc\"\n  },\n  \"peerDependencies\": {\n    \"@redis/client\": \"^6\"\n  },\n  \"devDependencies\": {\n    \"typescript\": \"^5\"\n  }\n}\n";
    assert_eq!(
        node_deps(node),
        (names(&["@redis/client"]), names(&["typescript"]))
    );
    let go = "module m\n\nrequire (\n\ta.b/c v1\n\td.e/f v2 // indirect\n)\nrequire g.h/i v3\n";
    assert_eq!(go_deps(go), (names(&["a.b/c", "g.h/i"]), names(&[])));
    assert_eq!(
        named_paths("`src/commands/mod.rs`, acquire.rs, e.g. 0.4 `commands/` I/O and/or redis+cluster:// `examples/{a,b}/main.go` ../worker.py `_transport/*/nodes.py` `.rs`"),
        names(&["_transport/*/nodes.py", "acquire.rs", "commands/", "examples/{a,b}/main.go", "src/commands/mod.rs", "worker.py"])
    );
    assert_eq!(expand_braces("x/{a,b}/m.go"), ["x/a/m.go", "x/b/m.go"]);
    let paths = names(&[
        "python/src/dlock/_transport/aio/nodes.py",
        "src/commands/mod.rs",
    ]);
    assert!(some_path_ends_with(&paths, "_transport/*/nodes.py"));
    assert!(some_path_ends_with(&paths, "commands/mod.rs"));
    assert!(!some_path_ends_with(&paths, "ommands/mod.rs"));
    assert!(!some_path_ends_with(&paths, "gone.rs"));
}
