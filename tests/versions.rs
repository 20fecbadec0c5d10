//! One version for the module and every package: set once in the workspace's Cargo.toml
//! (`[workspace.package]`), shown by `MODULE LIST`, and copied, where a package format wants it
//! literally, into python/pyproject.toml, node/package.json, each client's version constant and
//! the Java poms (scripts/version.sh sets them all; this test names any that disagrees). `COMMAND DOCS` "since" values are versions the
//! module has had: none is above the current one.

use crate::common::*;

use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// The first `"key" = "value"` or `"key": "value"` after `after` in `text`.
fn field(text: &str, after: &str, key: &str) -> String {
    let from = text.find(after).map_or(0, |i| i + after.len());
    let rest = &text[from..];
    let at = rest
        .find(key)
        .unwrap_or_else(|| panic!("no {key} after {after:?}"));
    let value = rest[at + key.len()..]
        .split('"')
        .nth(1)
        .expect("a quoted value");
    value.to_string()
}

/// The text between `open` and `close` at the first `open` after `after` (a pom's `<version>`).
fn element(text: &str, after: &str, open: &str, close: &str) -> String {
    let from = text.find(after).unwrap_or_else(|| panic!("no {after:?}")) + after.len();
    let rest = &text[from..];
    let start = rest.find(open).unwrap_or_else(|| panic!("no {open:?}")) + open.len();
    let end = rest[start..].find(close).expect("a closing mark");
    rest[start..start + end].to_string()
}

fn text(value: &redis::Value) -> String {
    match value {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        redis::Value::SimpleString(s) => s.clone(),
        redis::Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn parts(version: &str) -> (u32, u32, u32) {
    let numbers: Vec<u32> = version
        .split('.')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("{version:?} is not x.y.z"))
        })
        .collect();
    assert_eq!(numbers.len(), 3, "{version:?} is not x.y.z");
    (numbers[0], numbers[1], numbers[2])
}

#[test]
fn every_package_has_the_workspace_version() {
    let version = field(&read("Cargo.toml"), "[workspace.package]", "version =");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the module crate takes it"
    );
    // The published crates (make dist's cargo package) take it, and name each other at it.
    for manifest in ["core/Cargo.toml", "client/Cargo.toml", "cli/Cargo.toml"] {
        assert!(
            read(manifest).contains("\nversion.workspace = true\n"),
            "{manifest}: version.workspace = true"
        );
    }
    for dependency in ["dlock-core", "dlock-client"] {
        let named = field(
            &read("Cargo.toml"),
            &format!("\n{dependency} = {{ path = "),
            "version =",
        );
        assert_eq!(
            named, version,
            "Cargo.toml's [workspace.dependencies] {dependency}: run scripts/version.sh {version}"
        );
    }
    let copies = [
        (
            "python/pyproject.toml",
            field(&read("python/pyproject.toml"), "[project]", "version ="),
        ),
        (
            "node/package.json",
            field(&read("node/package.json"), "", "\"version\":"),
        ),
        (
            "node/package-lock.json",
            field(&read("node/package-lock.json"), "", "\"version\":"),
        ),
        (
            "node/package-lock.json (packages)",
            field(
                &read("node/package-lock.json"),
                "\"packages\"",
                "\"version\":",
            ),
        ),
        (
            "node/src/index.ts (VERSION)",
            field(&read("node/src/index.ts"), "", "export const VERSION ="),
        ),
        (
            "go/doc.go (Version)",
            field(&read("go/doc.go"), "", "const Version ="),
        ),
        (
            "java/pom.xml",
            element(
                &read("java/pom.xml"),
                "<artifactId>dlock</artifactId>",
                "<version>",
                "</",
            ),
        ),
        (
            "java/src/main/java/dev/dlock/Version.java",
            field(
                &read("java/src/main/java/dev/dlock/Version.java"),
                "",
                "VERSION =",
            ),
        ),
        (
            "bench/java/pom.xml (dlock.version)",
            element(&read("bench/java/pom.xml"), "", "<dlock.version>", "</"),
        ),
    ];
    for (file, copy) in copies {
        assert_eq!(
            copy, version,
            "{file} says {copy}, Cargo.toml {version}: run scripts/version.sh {version}"
        );
    }
}

#[test]
fn module_list_shows_the_version_and_no_command_is_newer_than_the_module() {
    let (major, minor, patch) = parts(env!("CARGO_PKG_VERSION"));
    let server = Server::start();
    let mut c = server.conn();
    let modules: Vec<Vec<redis::Value>> = redis::cmd("MODULE").arg("LIST").query(&mut c).unwrap();
    // Redis 8 lists its built-in modules too (vectorset), in no set order.
    let fields: Vec<String> = modules
        .iter()
        .map(|module| module.iter().map(text).collect::<Vec<_>>())
        .find(|fields| fields.windows(2).any(|w| w[0] == "name" && w[1] == "dlock"))
        .expect("dlock in MODULE LIST");
    let ver = fields.iter().position(|f| f == "ver").expect("ver");
    assert_eq!(
        fields[ver + 1],
        (major * 10_000 + minor * 100 + patch).to_string()
    );

    let docs: Vec<redis::Value> = redis::cmd("COMMAND").arg("DOCS").query(&mut c).unwrap();
    let mut seen = 0;
    for pair in docs.chunks(2) {
        let (name, doc) = (text(&pair[0]), &pair[1]);
        let redis::Value::Array(doc) = doc else {
            continue;
        };
        let since = doc.chunks(2).find(|kv| text(&kv[0]) == "since");
        if !name.starts_with("dlock.") {
            continue;
        }
        let since = text(&since.expect("a dlock command has a since")[1]);
        assert!(
            parts(&since) <= (major, minor, patch),
            "{name}: since {since} is after the module's version"
        );
        seen += 1;
    }
    assert!(seen >= 11, "every DLOCK command has a since: {seen}");
}
