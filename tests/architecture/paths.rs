//! The files and folders the architecture pages name, checked against the tree: a renamed or
//! removed file fails (and the readers of manifests and paths, checked on small inputs).

use std::collections::BTreeSet;
use std::path::Path;

use super::dependencies::{cargo_deps, go_deps, node_deps, python_deps};
use super::{repo, ARCHITECTURE_PAGES};

/// Where a manifest's dependencies are read: folders walked for them and every file listing,
/// skipped (builds, installs, caches).
const NOT_SOURCES: [&str; 11] = [
    "target",
    ".dist-test",
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
pub(super) fn tree() -> (BTreeSet<String>, BTreeSet<String>) {
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
