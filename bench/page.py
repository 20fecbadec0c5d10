"""Writes a benchmark's generated tables into its page under docs/bench/, between the page's
markers `<!-- NAME:start ... -->` and `<!-- NAME:end -->` (the prose around them is the page's
own). The Rust benches do the same through bench/src/page.rs. Standard library only."""

import os

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "bench")


def replace_between(page_text, name, block):
    """`page_text` with what stands between NAME's markers replaced by `block`; ValueError when
    the page lacks either marker, or has them out of order."""
    start = page_text.find(f"<!-- {name}:start")
    end = page_text.find(f"<!-- {name}:end -->")
    if start < 0 or end < start:
        raise ValueError(f"no <!-- {name}:start ... --> ... <!-- {name}:end --> markers")
    opened = page_text.index("-->", start) + len("-->")
    return page_text[:opened] + "\n" + block.strip("\n") + "\n" + page_text[end:]


def write_between(page, name, block):
    """Rewrites the file `page` with `block` between NAME's markers."""
    with open(page) as f:
        text = f.read()
    try:
        updated = replace_between(text, name, block)
    except ValueError as e:
        raise SystemExit(f"{page}: {e}") from None
    with open(page, "w") as f:
        f.write(updated)


if __name__ == "__main__":
    # Self-check: `python3 bench/page.py` (run by tests/docs/test_docs.py).
    page = "intro\n<!-- x:start (generated) -->\nold\n<!-- x:end -->\nafter\n"
    assert replace_between(page, "x", "new\n") == "intro\n<!-- x:start (generated) -->\nnew\n<!-- x:end -->\nafter\n"
    for broken in ("no markers", "<!-- x:end -->\n<!-- x:start -->"):
        try:
            replace_between(broken, "x", "new")
        except ValueError:
            continue
        raise AssertionError(broken)
    print("page.py: ok")
