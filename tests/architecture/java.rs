//! The Java client's file graph for the file map: which class file uses which. As in Go, a Java
//! file uses the classes of its own package by their bare names, with no import to read, and a
//! name in one file may be a nested type of another (`Attempt.LeaseLeft`); so, as for Go, only
//! the references across packages count: the imports (`import dev.dlock.transport.Node;`, or
//! `dev.dlock.transport.*` and the names it then uses). A class is its file (`Lease.java`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::graphs::without_go_comments_and_strings;
use super::{files, Graph};

/// Which file under `root` (`java/src/main/java/dev/dlock`) uses which in another package,
/// paths from `root`.
pub fn java_references(root: &Path) -> Graph {
    let mut sources = Vec::new();
    for file in files(root, ".java") {
        let path = file.strip_prefix(root).expect("under the package root");
        let path = path.to_string_lossy().replace('\\', "/");
        // Java's comments and strings are Go's (a text block's quotes pair off the same way).
        let code = without_go_comments_and_strings(&std::fs::read_to_string(&file).expect("read"));
        sources.push((path, code));
    }
    let mut classes: BTreeMap<(String, String), String> = BTreeMap::new();
    for (path, _) in &sources {
        classes.insert((package_of(path), class_of(path)), path.clone());
    }
    let mut graph = Graph::new();
    for (path, code) in &sources {
        let own = package_of(path);
        let used = graph.entry(path.clone()).or_default();
        let words = words(code);
        for ((package, class), file) in &classes {
            if *package != own && imports(code, package, class, &words) {
                used.insert(file.clone());
            }
        }
    }
    graph
}

/// A file's package as its folder under the root (`""`: `dev.dlock`).
fn package_of(path: &str) -> String {
    path.rsplit_once('/').map_or("", |(dir, _)| dir).to_string()
}

/// The class a file declares: its name.
fn class_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.trim_end_matches(".java").to_string()
}

/// Whether `code` imports `class` of the folder `package`: by name, or by `*` and then says it.
fn imports(code: &str, package: &str, class: &str, words: &BTreeSet<&str>) -> bool {
    let qualified = match package {
        "" => "dev.dlock".to_string(),
        dir => format!("dev.dlock.{}", dir.replace('/', ".")),
    };
    code.lines().map(str::trim).any(|line| {
        line == format!("import {qualified}.{class};")
            || (line == format!("import {qualified}.*;") && words.contains(class))
    })
}

/// The identifiers of `code`.
fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn a_java_file_uses_another_packages_classes_by_import() {
    let code = "package dev.dlock;\nimport dev.dlock.transport.Node;\nimport dev.dlock.x.*;\n\
        // import dev.dlock.transport.Server;\nclass A { Timing t; String s = \"Y\"; Node n; X x; }";
    let code = without_go_comments_and_strings(code);
    let w = words(&code);
    assert!(imports(&code, "transport", "Node", &w));
    assert!(!imports(&code, "transport", "Server", &w), "a comment");
    assert!(imports(&code, "x", "X", &w), "by * and used");
    assert!(!imports(&code, "x", "Y", &w), "a string is no use");
    assert_eq!(
        (
            package_of("transport/Node.java"),
            class_of("transport/Node.java")
        ),
        ("transport".into(), "Node".into())
    );
    assert_eq!(package_of("Lease.java"), "");
}
