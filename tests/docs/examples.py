"""The code examples of the documentation, as the tests read them.

Every fenced block of README.md, docs/**/*.md, python/README.md and node/README.md says after its
language how it is checked (docs/internals/suites.md, "The docs' examples"):

    ```sh run              the block runs (bash; python; js as an ES module, `js run as=cjs` as
                           CommonJS, each within its time, so a script that does not exit fails)
    ```console session     a transcript: `$ ` commands (bash) and `127.0.0.1:6379> ` commands
                           (redis-cli), each followed by the output it must print
    ```text output         what the `run` block just before it must print
    ```rust example=client/examples/readme.rs[#region]
                           the block is that file (or its `// docs: region` part), which
                           `cargo test` compiles and clippy lints
    ```sh make             each line `make TARGET`: a server target is started and answers,
                           any other is expanded by `make -n`
    ```text redis.conf     a server starts with these lines and loads the module
    ```sh install          installing a package: test_install.py runs these lines in a fresh
    ```toml install        app from a clean clone (the toml: a new crate's [dependencies], with
                           README.md's Rust example as its main.rs)
    ```sh dist step=NAME   a user's command for a release artifact that needs root and changes the
                           system (apt install ./redis-dlock_*.deb, editing /etc/redis): `make
                           dist-test` runs it (bash, in /dist of its clean Debian root) at its
                           step NAME, and test_docs.py checks the script runs every such step
    ```text                not code: a diagram, a format, a table of output

A block of code without one of these fails the tests, so a new example cannot escape them.
Options after the mode: `exit=N` (the exit status expected), `fixture=NAME` (the servers it runs
against, else guessed from the ports it names: 7001-7005 five masters, 7101-7106 a Redis
Cluster, 10.0.0.x:6380 three TLS masters, else one master on 6379).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The languages a block of code can have, and those (text) that are not code.
RUNNABLE = {"sh": "bash", "bash": "bash", "console": "bash", "python": "python", "js": "js"}
MODES = {"run", "session", "output", "example", "make", "redis.conf", "install", "dist"}
FENCE = re.compile(r"^(```+)(.*)$")


@dataclass
class Example:
    """One fenced block: where it is, its language, how it is checked, its text."""

    path: Path
    line: int
    lang: str
    mode: str
    options: dict[str, str]
    text: str
    #: The `output` block that follows a `run` block.
    output: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}-{self.lang}-{self.mode}"


def documents() -> list[Path]:
    """The Markdown files whose examples are checked."""
    found = [ROOT / "README.md", ROOT / "python/README.md", ROOT / "node/README.md"]
    found += sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in found if p.exists()]


def blocks(path: Path) -> list[Example]:
    """Every fenced block of `path`, in order."""
    lines = path.read_text().split("\n")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        fence, info = opened.group(1), opened.group(2).split()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence)), len(lines))
        lang = info[0] if info else ""
        mode = info[1].split("=")[0] if len(info) > 1 else ""
        options = dict(word.split("=", 1) for word in info[1:] if "=" in word)
        if mode == "example":
            options.setdefault("example", info[1].split("=", 1)[1])
        found.append(Example(path, i + 1, lang, mode, options, "\n".join(lines[i + 1 : end])))
        i = end + 1
    return found


def examples() -> list[Example]:
    """Every checked example; each `output` block joined to the `run` block before it."""
    found: list[Example] = []
    for path in documents():
        previous: Example | None = None
        for block in blocks(path):
            if block.mode == "output" and previous is not None and previous.mode == "run":
                previous.output = block.text
            elif block.mode not in ("", "output"):
                found.append(block)
            previous = block
    return found


def unlabelled() -> list[str]:
    """Blocks that are code but say nothing of how they are checked, or say it wrongly."""
    wrong = []
    for path in documents():
        previous: Example | None = None
        for block in blocks(path):
            where = f"{block.path.relative_to(ROOT)}:{block.line}"
            if block.lang == "":
                wrong.append(f"{where}: a block without a language (```text if it is not code)")
            elif block.mode == "" and block.lang != "text":
                wrong.append(f"{where}: ```{block.lang} without a mode: {', '.join(sorted(MODES))}")
            elif block.mode and block.mode not in MODES:
                wrong.append(f"{where}: unknown mode {block.mode!r}")
            elif block.mode == "output" and (previous is None or previous.mode != "run"):
                wrong.append(f"{where}: an output block that follows no run block")
            elif block.mode in ("run", "session") and block.lang not in RUNNABLE and block.lang != "text":
                wrong.append(f"{where}: cannot run ```{block.lang}")
            previous = block
    return wrong


# --- comparing what an example printed with what its page says ---------------------------------

#: A number that varies from run to run: a token, a TTL, a validity, an amount of time.
NUMBER = re.compile(r"\d+(?:\.\d+)?")
#: Owners: 128 random bits in hex.
HEX = re.compile(r"\b[0-9a-f]{32}\b")
#: Temporary paths.
TEMP = re.compile(r"/tmp/[\w.-]+")


def _numbers_close(expected: str, actual: str) -> bool:
    """Equal; or, for values that vary between runs (4 digits or more, or with a fraction),
    within 5% (tokens are microsecond clocks; TTLs and validities count down)."""
    if expected == actual:
        return True
    varying = "." in expected or len(expected) >= 4
    if not varying or ("." in actual) != ("." in expected):
        return False
    e, a = float(expected), float(actual)
    return abs(e - a) <= max(0.05 * abs(e), 0.15 if "." in expected else 0)


def same_line(expected: str, actual: str) -> bool:
    """Whether `actual` reads as `expected`, owners, temp paths and varying numbers aside."""
    expected, actual = HEX.sub("<hex>", expected.rstrip()), HEX.sub("<hex>", actual.rstrip())
    expected, actual = TEMP.sub("<tmp>", expected), TEMP.sub("<tmp>", actual)
    if NUMBER.sub("0", expected) != NUMBER.sub("0", actual):
        return False
    return all(_numbers_close(e, a) for e, a in zip(NUMBER.findall(expected), NUMBER.findall(actual), strict=True))


def differences(expected: str, actual: str) -> str | None:
    """None when `actual` reads as `expected` line by line; else both, to show."""
    want = expected.rstrip("\n").split("\n") if expected.strip() else []
    got = actual.rstrip("\n").split("\n") if actual.strip() else []
    if len(want) == len(got) and all(same_line(w, g) for w, g in zip(want, got, strict=True)):
        return None
    return "expected:\n" + "\n".join(want) + "\n--- got:\n" + "\n".join(got)


# --- rewriting the Rust blocks from the files they show -----------------------------------------


def bless() -> list[str]:
    """Rewrites every `rust example=` block with its file's text (or region); the pages changed."""
    import textwrap

    changed = []
    for path in documents():
        lines = path.read_text().split("\n")
        for block in reversed(blocks(path)):
            if block.mode != "example":
                continue
            target, _, name = block.options["example"].partition("#")
            text = (ROOT / target).read_text()
            if name:
                found = re.search(rf"^[ \t]*// docs: {re.escape(name)}\n(.*?)^[ \t]*// docs: end\n", text, re.M | re.S)
                assert found, f"{target}: no region {name}"
                text = textwrap.dedent(found.group(1))
            body = text.rstrip("\n").split("\n")
            old = block.text.split("\n") if block.text else []
            if old != body:
                lines[block.line : block.line + len(old)] = body
                changed.append(f"{block.path.relative_to(ROOT)}:{block.line}")
        path.write_text("\n".join(lines))
    return changed


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--json":
        # For scripts (make dist-test): a page's checked blocks, each `run` with its `output`.
        import json

        page = (ROOT / sys.argv[2]).resolve()
        chosen = [e for e in examples() if e.path == page]
        fields = ("line", "lang", "mode", "options", "text", "output")
        print(json.dumps([{k: getattr(e, k) for k in fields} for e in chosen], indent=1))
        sys.exit(0)
    if sys.argv[1:] != ["--bless"]:
        sys.exit(
            "usage: python3 tests/docs/examples.py --bless  (copies Rust examples into the pages)\n"
            "       python3 tests/docs/examples.py --json PAGE  (PAGE's checked blocks as JSON)"
        )
    for where in bless():
        print(f"rewrote {where}")
