//! The clients' one file map (docs/internals/file-map.md), checked: every file a row names
//! exists, every source file of every client is in a row (or left out by the page's rule), and
//! no two concepts depend on each other both ways, in any client or across clients; the page's
//! layers hold for every client's imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{files, python_graph, repo, typescript_graph, Graph};

/// The map's columns after the concept: each client's folder and its sources' extension.
const CLIENTS: [(&str, &str, &str); 5] = [
    ("Rust", "client/src", ".rs"),
    ("Python", "python/src/dlock", ".py"),
    ("Node", "node/src", ".ts"),
    ("Go", "go", ".go"),
    ("Java", "java/src/main/java/dev/dlock", ".java"),
];

/// One row: the concept, and per client its files (paths or `*` patterns), `None` for `—`.
#[derive(Debug)]
struct Row {
    concept: String,
    cells: Vec<Option<Vec<String>>>,
}

/// The rows of the page's table whose header starts `| concept |`; a cell is backticked paths
/// separated by commas, or `—` and the reason.
fn parse_map(page: &str) -> Result<Vec<Row>, String> {
    let table = page
        .split("\n| concept |")
        .nth(1)
        .ok_or("no table with a `concept` column")?;
    let mut rows = Vec::new();
    for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() != CLIENTS.len() + 1 {
            return Err(format!("not {} cells: {line}", CLIENTS.len() + 1));
        }
        let concept = cells[0]
            .strip_prefix("**")
            .and_then(|c| c.split("**").next());
        let concept = concept.ok_or(format!("no **concept** first: {line}"))?;
        let mut parsed = Vec::new();
        for cell in &cells[1..] {
            parsed.push(parse_cell(cell).map_err(|e| format!("{concept}: {e}"))?);
        }
        rows.push(Row {
            concept: concept.to_string(),
            cells: parsed,
        });
    }
    Ok(rows)
}

fn parse_cell(cell: &str) -> Result<Option<Vec<String>>, String> {
    if let Some(reason) = cell.strip_prefix('—') {
        return match reason.trim().is_empty() {
            true => Err("a `—` without its reason".into()),
            false => Ok(None),
        };
    }
    let mut paths = Vec::new();
    for item in cell.split(", ") {
        let path = item.strip_prefix('`').and_then(|i| i.strip_suffix('`'));
        match path {
            Some(path) if !path.contains('`') => paths.push(path.to_string()),
            _ => {
                return Err(format!(
                    "{cell:?} is neither `file`, `file` nor — and a reason"
                ))
            }
        }
    }
    Ok(Some(paths))
}

/// Whether `pattern` names `file`: path components alike, `*` standing for any one.
fn names(pattern: &str, file: &str) -> bool {
    let (p, f): (Vec<_>, Vec<_>) = (pattern.split('/').collect(), file.split('/').collect());
    p.len() == f.len() && p.iter().zip(&f).all(|(p, f)| *p == "*" || p == f)
}

/// Each source file's concept in column `client`, and what is wrong: a name that matches no
/// source file, a file in two rows, a file in none.
fn concepts(
    rows: &[Row],
    client: usize,
    sources: &BTreeSet<String>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let (mut of, mut wrong) = (BTreeMap::new(), Vec::new());
    for row in rows {
        for pattern in row.cells[client].iter().flatten() {
            let named: Vec<&String> = sources.iter().filter(|f| names(pattern, f)).collect();
            if named.is_empty() {
                wrong.push(format!("{}: `{pattern}` names no source file", row.concept));
            }
            for file in named {
                if let Some(other) = of.insert(file.clone(), row.concept.clone()) {
                    wrong.push(format!("{file} is in two rows: {other}, {}", row.concept));
                }
            }
        }
    }
    for file in sources.iter().filter(|f| !of.contains_key(*f)) {
        wrong.push(format!("{file} is in no row"));
    }
    (of, wrong)
}

/// Which concept reaches which, by the files' imports followed to their end.
fn reach(graph: &Graph, concept_of: &BTreeMap<String, String>) -> BTreeSet<(String, String)> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, used) in graph {
        for other in used {
            if let (Some(a), Some(b)) = (concept_of.get(file), concept_of.get(other)) {
                if a != b {
                    edges.entry(a).or_default().insert(b);
                }
            }
        }
    }
    let mut reached = BTreeSet::new();
    for from in edges.keys() {
        let mut stack: Vec<&str> = vec![from];
        let mut seen = BTreeSet::new();
        while let Some(at) = stack.pop() {
            for next in edges.get(at).into_iter().flatten() {
                if seen.insert(*next) {
                    stack.push(next);
                }
            }
        }
        reached.extend(
            seen.into_iter()
                .filter(|to| to != from)
                .map(|to| (from.to_string(), to.to_string())),
        );
    }
    reached
}

/// Every pair reached one way in a client and the other way in the same or another client.
fn both_ways(reached: &[(&str, BTreeSet<(String, String)>)]) -> Vec<String> {
    let mut found = Vec::new();
    for (one, pairs) in reached {
        for (a, b) in pairs {
            for (other, theirs) in reached {
                if theirs.contains(&(b.clone(), a.clone()))
                    && (one < other || (one == other && a < b))
                {
                    found.push(format!("{one}: {a} -> {b}, but {other}: {b} -> {a}"));
                }
            }
        }
    }
    found
}

/// A client's source files the map must place, paths from its folder: all but the page's rule
/// leaves out (entry points and module roots, unit tests and test doubles, generated files,
/// Go's examples and test servers). Rust's include the CLI's, as `cli/src/...`.
fn sources(client: usize) -> BTreeSet<String> {
    let (_, dir, ext) = CLIENTS[client];
    let listed = |dir: &str, prefix: &str| -> Vec<String> {
        let root = repo(dir);
        let rel = |f: &Path| {
            f.strip_prefix(&root)
                .expect("under its folder")
                .to_string_lossy()
                .into_owned()
        };
        files(&root, ext)
            .iter()
            .map(|f| format!("{prefix}{}", rel(f)))
            .collect()
    };
    let mut all = listed(dir, "");
    if client == 0 {
        all.extend(listed("cli/src", "cli/src/"));
    }
    all.into_iter().filter(|f| !left_out(f)).collect()
}

fn left_out(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        "lib.rs" | "main.rs" | "mod.rs" | "__init__.py" | "index.ts" | "doc.go" | "fake.rs"
    ) || name.ends_with("_tests.rs")
        || name.ends_with("_test.go")
        || ["_sync/", "examples/", "internal/"]
            .iter()
            .any(|d| path.starts_with(d))
}

/// Each client's imports file by file, paths as the map writes them. The CLI's are left out: a
/// crate above the library, its files sit in the rows of the concern each serves.
fn imports(client: usize) -> Graph {
    let with_ext = |graph: Graph, ext: &str| -> Graph {
        let name = |m: &String| format!("{m}{ext}");
        graph
            .iter()
            .map(|(f, used)| (name(f), used.iter().map(name).collect()))
            .collect()
    };
    match client {
        0 => super::graphs::rust_files(&repo("client/src")),
        1 => {
            let package = repo("python/src/dlock");
            let path_of: BTreeMap<String, String> = files(&package, ".py")
                .iter()
                .map(|f| {
                    f.strip_prefix(&package)
                        .expect("in the package")
                        .to_string_lossy()
                        .into_owned()
                })
                .map(|p| {
                    (
                        p.trim_end_matches(".py")
                            .trim_end_matches("/__init__")
                            .replace('/', "."),
                        p,
                    )
                })
                .collect();
            let path = |m: &String| path_of.get(m).cloned().unwrap_or_default();
            let graph = python_graph(&package);
            graph
                .iter()
                .map(|(m, used)| (path(m), used.iter().map(path).collect()))
                .collect()
        }
        2 => with_ext(typescript_graph(&repo("node/src")), ".ts"),
        3 => super::graphs::go_references(&repo("go")),
        _ => super::java::java_references(&repo("java/src/main/java/dev/dlock")),
    }
}

fn page() -> String {
    std::fs::read_to_string(repo("docs/internals/file-map.md")).expect("docs/internals/file-map.md")
}

#[test]
fn the_file_map_names_every_source_file_of_every_client_and_none_that_is_missing() {
    let rows = parse_map(&page()).unwrap_or_else(|e| panic!("docs/internals/file-map.md: {e}"));
    assert!(rows.len() > 30, "the map was not read: {rows:?}");
    let mut wrong = Vec::new();
    for (client, (name, dir, _)) in CLIENTS.iter().enumerate() {
        let (_, problems) = concepts(&rows, client, &sources(client));
        wrong.extend(
            problems
                .into_iter()
                .map(|p| format!("{name} ({dir}/): {p}")),
        );
    }
    assert!(
        wrong.is_empty(),
        "docs/internals/file-map.md and the trees differ:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_concepts_depend_on_each_other_both_ways_in_any_client() {
    let page = page();
    let rows = parse_map(&page).expect("the map");
    let mut reached = Vec::new();
    for (client, (name, ..)) in CLIENTS.iter().enumerate() {
        let (concept_of, _) = concepts(&rows, client, &sources(client));
        let graph = imports(client);
        assert!(
            graph.len() > 10,
            "{name}'s imports were not read: {graph:?}"
        );
        reached.push((*name, reach(&graph, &concept_of)));
    }
    let found = both_ways(&reached);
    assert!(
        found.is_empty(),
        "concepts used both ways round (docs/internals/file-map.md):\n{}",
        found.join("\n")
    );
    let layers = layers(&page);
    for (name, pairs) in &reached {
        for (a, b) in pairs {
            let (above, below) = (layers.get(a.as_str()), layers.get(b.as_str()));
            assert!(
                matches!((above, below), (Some(x), Some(y)) if x < y),
                "{name}: {a} reaches {b}, but the layers of docs/internals/file-map.md do not put {a} above {b}"
            );
        }
    }
}

/// Each concept's line in the page's layers (the first `text` block after "One direction"),
/// highest first.
fn layers(page: &str) -> BTreeMap<&str, usize> {
    let after = page
        .split("## One direction per pair")
        .nth(1)
        .unwrap_or_default();
    let block = after
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next());
    let lines = block.unwrap_or_default().lines().enumerate();
    lines
        .flat_map(|(at, line)| line.split_whitespace().map(move |c| (c, at)))
        .collect()
}

#[test]
fn the_file_map_check_fails_on_a_wrong_map() {
    let page = "x\n| concept | Rust | Python | Node | Go | Java |\n|---|---|---|---|---|---|\n\
        | **timing**: t | `timing.rs` | `_pure/timing.py` | — none | — none | — none |\n\
        | **options**: o | `options.rs` | `_pure/options.py`, `_transport/*/x.py` | — none | — none | — none |\n";
    let rows = parse_map(page).expect("a well-formed map");
    let set = |files: &[&str]| files.iter().map(|f| f.to_string()).collect::<BTreeSet<_>>();
    let python = set(&[
        "_pure/timing.py",
        "_pure/options.py",
        "_transport/aio/x.py",
        "_transport/sync/x.py",
    ]);
    let (of, wrong) = concepts(&rows, 1, &python);
    assert!(wrong.is_empty(), "{wrong:?}");
    assert_eq!(of["_transport/sync/x.py"], "options");
    let (_, wrong) = concepts(&rows, 0, &set(&["timing.rs", "checks.rs"]));
    assert_eq!(
        wrong,
        [
            "options: `options.rs` names no source file",
            "checks.rs is in no row"
        ]
    );
    assert!(
        parse_map(&page.replace("— none", "—")).is_err(),
        "a — needs its reason"
    );
    assert!(
        parse_map(&page.replace("`timing.rs`", "timing.rs")).is_err(),
        "a cell is files or —"
    );
    // Rust: options -> timing; Python the other way round: found, naming both.
    let graph = |edges: &[(&str, &str)]| -> Graph {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    let (rust_of, _) = concepts(&rows, 0, &set(&["timing.rs", "options.rs"]));
    let rust = reach(&graph(&[("options.rs", "timing.rs")]), &rust_of);
    let python_reach = reach(&graph(&[("_pure/timing.py", "_transport/aio/x.py")]), &of);
    assert_eq!(
        both_ways(&[("Rust", rust.clone()), ("Python", python_reach)]),
        ["Python: timing -> options, but Rust: options -> timing"]
    );
    assert!(both_ways(&[("Rust", rust.clone()), ("Python", rust)]).is_empty());
    let layered = layers("## One direction per pair\n\n```text\noptions  checks\ntiming\n```\n");
    assert!(layered["options"] < layered["timing"] && layered["checks"] == layered["options"]);
}
