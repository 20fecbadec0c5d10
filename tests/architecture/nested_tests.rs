//! The nested cycle finder on crates written for the purpose: paths read as Rust resolves them,
//! and cycles found between files, between folders, and through a binary's root.

use std::collections::BTreeSet;

use super::*;

/// A crate written to a temp dir: `files` as (path under src, text).
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    for (path, text) in files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
        std::fs::write(file, text).expect("write a source");
    }
    dir
}

#[test]
fn the_nested_cycle_finder_reads_paths_as_rust_resolves_them() {
    let paths = |t: &str| {
        let p = tree_paths(t);
        p.iter().map(|p| p.join("::")).collect::<Vec<_>>()
    };
    assert_eq!(
        paths("crate::a::{self, b::C, d::{e, f as g}, h::*};"),
        [
            "crate::a::self",
            "crate::a::b::C",
            "crate::a::d::e",
            "crate::a::d::f",
            "crate::a::h::*",
        ]
    );
    let src = crate_of(&[
        ("lib.rs", "pub mod topology;\npub mod run;"),
        (
            "topology/mod.rs",
            "mod nodes;\npub fn deploy() { nodes::start() }",
        ),
        (
            "topology/nodes.rs",
            "use super::super::run::Spec; // crate::nothing\n",
        ),
        ("topology/nodes_tests.rs", "use super::*;"),
        // A string's `//` and `{`, a character `{`, an inline module's `super` (this file).
        (
            "run.rs",
            "use crate::{topology::{self, nodes::Node}};\n\
             const URL: &str = \"redis://h/{\"; const OPEN: char = '{';\n\
             mod tests {\n    use super::*;\n}\n",
        ),
    ]);
    let graph = file_graph(src.path());
    let uses = |m: &str| graph[m].iter().cloned().collect::<Vec<_>>();
    assert_eq!(uses("topology"), ["topology::nodes"]);
    assert_eq!(uses("topology::nodes"), ["run"]);
    assert_eq!(uses("topology::nodes::tests"), ["topology::nodes"]);
    assert_eq!(uses("run"), ["topology", "topology::nodes"]);
    assert_eq!(
        folded(&graph, 1)["run"],
        BTreeSet::from(["topology".to_string()])
    );
}

#[test]
fn the_nested_cycle_finder_finds_cycles_between_files_and_between_folders() {
    // Two files of one folder: the folder's module and its child use each other.
    let files = crate_of(&[
        ("lib.rs", "pub mod topology;"),
        (
            "topology/mod.rs",
            "pub mod cluster;\npub struct Deployment;\nfn f() { cluster::deploy() }",
        ),
        ("topology/cluster.rs", "use super::Deployment;"),
    ]);
    assert_eq!(
        cycles_at_every_depth(&file_graph(files.path())),
        [
            "topology -> topology::cluster -> topology",
            "topology::cluster -> topology -> topology::cluster",
        ]
    );
    // Two folders, though no two files use each other: nodes -> faults -> net.
    let folders = crate_of(&[
        ("main.rs", "mod nemesis;\nmod topology;"),
        ("topology/nodes.rs", "use crate::nemesis::faults::Fault;"),
        ("topology/net.rs", ""),
        ("nemesis/faults.rs", "use crate::topology::net::Net;"),
    ]);
    let graph = file_graph(folders.path());
    assert!(folded(&graph, 2)
        .keys()
        .all(|m| cycle_from(&folded(&graph, 2), m).is_none()));
    assert_eq!(
        cycles_at_every_depth(&graph),
        [
            "nemesis -> topology -> nemesis",
            "topology -> nemesis -> topology",
        ]
    );
    // A module using an item of the binary's root, which declares and uses it.
    let root = crate_of(&[
        (
            "main.rs",
            "mod cluster;\nfn main() { cluster::run() }\nfn manager() {}",
        ),
        ("cluster.rs", "pub fn run() { crate::manager() }"),
    ]);
    assert_eq!(
        cycles_at_every_depth(&file_graph(root.path())),
        ["cluster -> crate -> cluster", "crate -> cluster -> crate",]
    );
}
