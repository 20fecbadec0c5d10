"""Every code example of README.md, docs/ and the packages' READMEs runs as its page shows it
(examples.py says how each is marked), and the pages keep the shape a newcomer needs."""

from __future__ import annotations

import re

import pytest
from conftest import Fleets
from examples import ROOT, Example, examples, unlabelled
from fleet import fixture_for
from runner import run

EXAMPLES = [e for e in examples() if e.mode != "install"]  # installs: test_install.py
INSTALLS = [e for e in examples() if e.mode == "install"]


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


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text().split("\n")
    assert len(lines) <= 251, f"README.md has {len(lines)} lines: move details to docs/"
    commands = [line.split("#")[0].strip() for line in lines[:8] if line.startswith("make ")]
    assert commands[:2] == ["make run", "make test"], lines[:8]
    text = "\n".join(lines)
    for needed in ("Rust toolchain", "python3-venv", "Node 20", "REDIS_PORT"):
        assert needed in text, f"README.md does not mention {needed}"


def test_every_link_to_a_file_of_the_repository_leads_somewhere() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
