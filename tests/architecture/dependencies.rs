//! docs/architecture.md's dependency table, checked against every manifest in both directions.

use std::collections::{BTreeMap, BTreeSet};

use super::paths::tree;
use super::repo;

/// A manifest's direct dependencies: (what it needs to build and run, what only its tests,
/// examples or build tools need).
type Deps = (BTreeSet<String>, BTreeSet<String>);

/// A Cargo.toml's dependencies by name: `[dependencies]`, `[build-dependencies]` and
/// `[target.'...'.dependencies]` first, `[dev-dependencies]` second (`[workspace.dependencies]`
/// only declares versions). Keys at the start of a line, dotted (`x.workspace = true`) or not.
pub(super) fn cargo_deps(text: &str) -> Deps {
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
pub(super) fn python_deps(text: &str) -> Deps {
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
pub(super) fn node_deps(text: &str) -> Deps {
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
pub(super) fn go_deps(text: &str) -> Deps {
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

/// pom.xml: each `<dependency>` as `groupId:artifactId`, those of `test` scope second (the
/// plugins are the build's, and a managed BOM only pins versions: neither is a dependency).
pub(super) fn pom_deps(text: &str) -> Deps {
    let mut deps: Deps = Default::default();
    let element = |block: &str, name: &str| -> String {
        let open = format!("<{name}>");
        let value = block.split(&open).nth(1).unwrap_or("");
        value.split('<').next().unwrap_or("").trim().to_string()
    };
    // What `<dependencyManagement>` names pins versions (a BOM): not a dependency.
    let managed = text.split("<dependencyManagement>").nth(1);
    let managed = managed.and_then(|m| m.split("</dependencyManagement>").next());
    let text = managed.map_or(text.to_string(), |m| text.replace(m, ""));
    for block in text.split("<dependency>").skip(1) {
        let block = block.split("</dependency>").next().unwrap_or("");
        let name = format!(
            "{}:{}",
            element(block, "groupId"),
            element(block, "artifactId")
        );
        match element(block, "scope").as_str() {
            "test" => deps.1.insert(name),
            _ => deps.0.insert(name),
        };
    }
    deps
}

/// The manifests the dependency table must list, and how each is read: every Cargo.toml of the
/// repository (the workspace's crates and the fuzz crate's own workspace), the Python, Node
/// and Go clients' manifests, make dist's Go tool (packaging/gomodzip), and every Maven pom.xml.
fn manifests(files: &BTreeSet<String>) -> BTreeMap<String, Deps> {
    let mut found = BTreeMap::new();
    for file in files {
        let read = || std::fs::read_to_string(repo(file)).expect("read a manifest");
        let deps = match file.as_str() {
            f if f == "Cargo.toml" || f.ends_with("/Cargo.toml") => cargo_deps(&read()),
            "python/pyproject.toml" => python_deps(&read()),
            "node/package.json" => node_deps(&read()),
            "go/go.mod" | "packaging/gomodzip/go.mod" => go_deps(&read()),
            f if f == "pom.xml" || f.ends_with("/pom.xml") => pom_deps(&read()),
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
