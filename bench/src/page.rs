//! A benchmark's generated tables written into its page under docs/bench/, between the page's
//! markers `<!-- NAME:start ... -->` and `<!-- NAME:end -->`; the prose around them is the
//! page's own. (bench/page.py does the same for the Python benches.)

use std::path::{Path, PathBuf};

/// docs/bench/ of this repository.
pub fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bench")
}

/// `page` with what stands between NAME's markers replaced by `block`; an error when the page
/// lacks either marker or has them out of order.
pub fn replace_between(page: &str, name: &str, block: &str) -> Result<String, String> {
    let missing = || format!("no <!-- {name}:start ... --> ... <!-- {name}:end --> markers");
    let start = page
        .find(&format!("<!-- {name}:start"))
        .ok_or_else(missing)?;
    let end = page
        .find(&format!("<!-- {name}:end -->"))
        .ok_or_else(missing)?;
    let opened = start + page[start..].find("-->").ok_or_else(missing)? + "-->".len();
    if end < opened {
        return Err(missing());
    }
    Ok(format!(
        "{}\n{}\n{}",
        &page[..opened],
        block.trim_matches('\n'),
        &page[end..]
    ))
}

/// Rewrites the file `path` with `block` between NAME's markers.
pub fn write_between(path: &Path, name: &str, block: &str) -> Result<(), String> {
    let page = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let updated =
        replace_between(&page, name, block).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::write(path, updated).map_err(|e| format!("{}: {e}", path.display()))
}

/// A stand-alone Markdown report as a section of a page: its title (a first `# ` line) left
/// out, its `## ` headings made `### `.
pub fn as_section(report: &str) -> String {
    let mut lines: Vec<&str> = report.lines().collect();
    if lines.first().is_some_and(|l| l.starts_with("# ")) {
        lines.remove(0);
    }
    lines
        .iter()
        .map(|l| {
            if l.starts_with("## ") {
                format!("#{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_between_the_markers_is_replaced_and_nothing_else() {
        let page = "intro\n<!-- x:start (generated) -->\nold\n<!-- x:end -->\nafter\n";
        assert_eq!(
            replace_between(page, "x", "\nnew\n").unwrap(),
            "intro\n<!-- x:start (generated) -->\nnew\n<!-- x:end -->\nafter\n"
        );
        assert!(replace_between("no markers", "x", "new").is_err());
        assert!(replace_between("<!-- x:end -->\n<!-- x:start -->", "x", "new").is_err());
        assert!(replace_between(page, "y", "new").is_err());
    }

    #[test]
    fn a_report_becomes_a_section() {
        assert_eq!(
            as_section("# title\n\ntext\n\n## 1. a\n\n| x |\n### kept"),
            "\ntext\n\n### 1. a\n\n| x |\n### kept"
        );
    }

    #[test]
    fn the_pages_the_benches_write_have_their_markers() {
        let clients = std::fs::read_to_string(docs_dir().join("clients.md")).unwrap();
        assert!(replace_between(&clients, "bench", "x").is_ok());
    }
}
