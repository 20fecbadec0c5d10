"""Every code example of README.md, docs/ and the packages' READMEs runs as its page shows it
(examples.py says how each is marked), and the pages keep the shape a newcomer needs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Fleets
from examples import ROOT, Example, examples, unlabelled
from fleet import fixture_for
from runner import run

EXAMPLES = [e for e in examples() if e.mode not in ("install", "dist")]  # installs: test_install.py
INSTALLS = [e for e in examples() if e.mode == "install"]
DIST = [e for e in examples() if e.mode == "dist"]  # make dist-test runs them


def test_every_block_of_code_says_how_it_is_checked() -> None:
    assert unlabelled() == []
    assert len(EXAMPLES) >= 40, "the examples are found"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_the_example_runs_as_shown(example: Example, fleets: Fleets, built: None) -> None:
    fixture = fixture_for(example.text, example.options.get("fixture"))
    fleet = fleets.get(fixture) if example.mode in ("run", "session") else None
    wrong = run(example, fleet, fixture)
    assert wrong is None, wrong


def test_install_lines_elsewhere_are_the_readme_s_which_test_install_runs() -> None:
    readme = {line for e in INSTALLS if e.path == ROOT / "README.md" for line in e.text.split("\n")}
    assert readme, "README.md has install blocks"
    for example in INSTALLS:
        for line in example.text.split("\n"):
            assert line in readme, f"{example.where}: {line!r} is not one of README.md's install lines"


def test_every_dist_block_is_a_step_make_dist_test_runs() -> None:
    """`sh dist` blocks need root and change the system: scripts/dist-test.sh runs each, in its
    clean Debian root, by the step= it names (docs/install.md's only; each step once)."""
    script = (ROOT / "scripts/dist-test.sh").read_text()
    steps = [e.options.get("step") for e in DIST]
    assert DIST, "docs/install.md has sh dist blocks"
    assert len(set(steps)) == len(steps), f"a step twice: {steps}"
    for example in DIST:
        assert example.path == ROOT / "docs/install.md", f"{example.where}: sh dist blocks are docs/install.md's"
        assert example.lang == "sh", f"{example.where}: ```sh dist"
        step = example.options.get("step")
        assert step, f"{example.where}: a sh dist block names its step=NAME"
        assert re.search(rf"^\s*docs_step {re.escape(step)}( |$)", script, re.M), (
            f"{example.where}: scripts/dist-test.sh never runs step={step}"
        )


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().split("\n")
    assert len(lines) <= 251, f"README.md has {len(lines)} lines: move details to docs/"
    commands = [line.split("#")[0].strip() for line in lines[:8] if line.startswith("make ")]
    assert commands[:2] == ["make run", "make test"], lines[:8]
    text = "\n".join(lines)
    for needed in ("Rust toolchain", "python3-venv", "Node 20", "REDIS_PORT"):
        assert needed in text, f"README.md does not mention {needed}"


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_no_page_of_the_docs_is_over_400_lines() -> None:
    """Issue 49: no page of docs/ over 400 lines (as `wc -l` counts them). A longer one is split:
    a section that stands on its own moves to a page of the page's folder (docs/go/,
    docs/protocol/, docs/internals/, ...), its heading and a link left where it was."""
    over = [
        f"{page.relative_to(ROOT)}: {count} lines"
        for page in sorted((ROOT / "docs").rglob("*.md"))
        if (count := len(page.read_text().splitlines())) > 400
    ]
    assert over == [], "pages over 400 lines (move a section to a page of its own):\n" + "\n".join(over)


def test_every_link_to_a_file_of_the_repository_leads_somewhere() -> None:
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of `page` (fenced blocks left out): the heading's
    text with links reduced to their words, lower case, punctuation dropped, spaces as hyphens;
    a repeated one numbered -1, -2, ..."""
    found: set[str] = set()
    fence = ""
    for line in page.read_text().split("\n"):
        opened = re.match(r"^(```+|~~~+)", line)
        if opened and not fence:
            fence = opened.group(1)
        elif fence and line.startswith(fence):
            fence = ""
        elif not fence and (heading := re.match(r"^#{1,6} +(.*?) *#* *$", line)):
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).lower()
            slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
            numbered, n = slug, 0
            while numbered in found:
                n += 1
                numbered = f"{slug}-{n}"
            found.add(numbered)
    return found


def test_every_link_to_a_section_leads_to_a_heading_of_its_page() -> None:
    broken = []
    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", page.read_text()):
            if "://" in target or not (target == "" or target.endswith(".md")):
                continue
            linked = (page.parent / target).resolve() if target else page
            if linked.exists() and anchor not in anchors(linked):
                broken.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == [], "links to headings that are not there (moved or renamed?)"


def test_the_anchor_reader_reads_headings_as_github_does(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "# A lock for the price of a SET (`make bench-server`)\n```sh run\n# not a heading\n```\n"
        "## 5. Fair waiting ([in the module](x.md))\n## Notes\n## Notes\n"
    )
    assert anchors(page) == {
        "a-lock-for-the-price-of-a-set-make-bench-server",
        "5-fair-waiting-in-the-module",
        "notes",
        "notes-1",
    }


def test_the_bench_pages_writer_replaces_only_between_its_markers() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "bench/page.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_growth_curves_page_shows_the_committed_figures() -> None:
    """docs/bench/scale.md's generated tables are what bench/scale-results.json renders to: a
    page edited by hand, or figures committed without their page, fail."""
    result = subprocess.run([sys.executable, str(ROOT / "bench/scale_report.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
