//! Where the architecture pages list a folder's files: a line that starts with the folder
//! (`partitions/src/`), then the lines indented under it; inside that, a subfolder's own line
//! (`  topology/`) and the lines indented under it. A file must be named in the listing of its
//! own folder, so that one folder's `cluster.rs` is not taken for another's: the suites' files,
//! whose folders share names (`SCOPED`); the others anywhere in the doc.

use std::path::Path;

/// The listed folders whose files must be named in their own folder's listing.
const SCOPED: [&str; 2] = ["partitions/src", "chaos/src"];

/// The part of `doc` that must name `file`, a path relative to the listed folder `dir`: the
/// listing of its folder for a scoped folder that has one, else the whole doc.
pub(super) fn scope<'a>(doc: &'a str, dir: &str, file: &Path) -> &'a str {
    let listed = block(doc, &format!("{dir}/"), true);
    let Some(mut text) = listed.filter(|_| SCOPED.contains(&dir)) else {
        return doc;
    };
    for folder in file.parent().into_iter().flat_map(Path::components) {
        let header = format!("{}/", folder.as_os_str().to_string_lossy());
        text = block(text, &header, false).unwrap_or(text);
    }
    text
}

/// From the line that starts with `header` (after its indentation; at none if `top`) to the
/// last line after it indented deeper, the header's line included; a blank line ends it too.
fn block<'a>(text: &'a str, header: &str, top: bool) -> Option<&'a str> {
    let mut offset = 0;
    let mut start: Option<(usize, usize)> = None;
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        match start {
            None if line.trim_start().starts_with(header) && (!top || indent == 0) => {
                start = Some((offset, indent));
            }
            Some((from, depth)) if line.trim().is_empty() || indent <= depth => {
                return Some(&text[from..offset]);
            }
            _ => {}
        }
        offset += line.len();
    }
    start.map(|(from, _)| &text[from..])
}

#[test]
fn a_file_is_looked_for_in_its_own_folders_listing() {
    let doc = "chaos/src/  the crate\n  x.rs     x\n  one/     a folder\n    y.rs   y\n\
               \x20 two/     another\n    z.rs   z\nb/src/     another crate\n  y.rs\n";
    let at = |file: &str| scope(doc, "chaos/src", Path::new(file));
    assert!(at("x.rs").contains("x.rs") && !at("x.rs").contains("b/src"));
    assert_eq!(at("one/y.rs"), "  one/     a folder\n    y.rs   y\n");
    assert_eq!(at("two/z.rs"), "  two/     another\n    z.rs   z\n");
    assert!(
        !at("two/y.rs").contains("y.rs"),
        "one/'s y.rs does not count for two/"
    );
    assert_eq!(
        scope(doc, "c/src", Path::new("w.rs")),
        doc,
        "no listing: the whole doc"
    );
}
