"""Generates the sync client from the asyncio one, as httpcore's scripts/unasync.py does.

The manager, the lock, the backend, the node calls and the driver are written once, for asyncio
(src/dlock/_async/), and their sync twins are generated from them into src/dlock/_sync/ (and
the public dlock/__init__.py from dlock/asyncio/__init__.py): the two differ only where
`async`/`await` do. What truly differs between the flavours (connections, fan-out, server-side
waits, cancellation vs threads) sits in small hand-written modules of the same names on both
sides (_transport/aio/ and _transport/sync/), which the generated code imports by the renaming
below.

    python tools/unasync.py           # (from python/) writes the sync files
    python tools/unasync.py --check   # exits 1, naming each stale file, if any differs

Each source line goes through RULES (token replacements). Two kinds of marked block, between
comment lines, hold what the flavours say differently (docstrings, mostly):

    # unasync: asyncio only
    ...lines dropped from the sync twin...
    # unasync: sync only
    # ...lines commented out in the asyncio source, uncommented in the twin (no RULES)...
    # unasync: end

Either part may be left out. Last, the imports are sorted and grouped again as isort does (a
renamed module may sort elsewhere), without the names only asyncio-only code used, so the twin
passes ruff's checks as the source does. Stdlib only."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "dlock"

#: asyncio source -> generated sync file, both relative to src/dlock/.
FILES = {
    "asyncio/__init__.py": "__init__.py",
    "_async/manager.py": "_sync/manager.py",
    "_async/lock.py": "_sync/lock.py",
    "_async/backend.py": "_sync/backend.py",
    "_async/calls.py": "_sync/calls.py",
    "_async/driver.py": "_sync/driver.py",
    "_async/election.py": "_sync/election.py",
    "_async/election_watch.py": "_sync/election_watch.py",
}

#: (pattern, replacement), applied in this order to every line outside a "sync only" block.
RULES: list[tuple[str, str]] = [
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\b__aiter__\b", "__iter__"),  # an observer: an async iterator, an iterator in the twin
    (r"\b__anext__\b", "__next__"),
    (r"\bStopAsyncIteration\b", "StopIteration"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\baclose\b", "close"),
    (r"\bAwaitable\[(\w+)\]", r"\1"),
    (r"^import asyncio$", "import threading"),
    (r"\basyncio\.Event\b", "threading.Event"),
    (r"^from redis\.asyncio import", "from redis import"),  # redis-py's clients: same names
    # The asyncio manager hands out a PendingLock (acquired when awaited); the sync one acquires
    # at once.
    (r"\bPendingLock\(lambda: (.*)\)$", r"\1"),
    (r"-> PendingLock\[(.+)\]:", r"-> \1:"),
    # Each flavour's own transport: dlock._transport.aio.x -> dlock._transport.sync.x.
    (r"^from \.\._transport\.aio\.", "from .._transport.sync."),
]

#: More rules for the public package's __init__, which sits one level up from its source
#: (dlock.asyncio -> dlock): what it imports from dlock._async comes from dlock._sync.
ONE_LEVEL_UP: list[tuple[str, str]] = [
    (r"^from \.\._async\.", "from ._sync."),
    (r"^from \.\.(\w)", r"from .\1"),
]

MARKER = re.compile(r"^(\s*)# unasync: (asyncio only|sync only|end)$")


def header(source: str) -> str:
    return (
        f"# Generated from src/dlock/{source} by python/tools/unasync.py: do not edit. Edit that file,\n"
        "# then run `python tools/unasync.py` in python/ (`make python-test` checks it is up to date).\n"
    )


class SourceError(Exception):
    """A malformed block in an asyncio source."""


def unasync_line(line: str, rules: list[tuple[str, str]]) -> str:
    for pattern, replacement in rules:
        line = re.sub(pattern, replacement, line)
    return line


def uncomment(line: str, indent: str, where: str) -> str:
    """A "sync only" line: `# code` at the block's indentation becomes `code`."""
    if line.strip() in ("", "#"):
        return ""
    if not line.startswith(f"{indent}# "):
        raise SourceError(f"{where}: a 'sync only' line must be `{indent}# ...`")
    return indent + line[len(indent) + 2 :]


def unasync_lines(lines: list[str], name: str, rules: list[tuple[str, str]]) -> list[str]:
    """The sync twin's lines: blocks resolved, `rules` applied outside "sync only" blocks."""
    out: list[str] = []
    part = "both"
    indent = ""
    for number, line in enumerate(lines, 1):
        where = f"{name}:{number}"
        marker = MARKER.match(line)
        if marker:
            kind = marker.group(2)
            if kind == part or (kind == "end" and part == "both"):
                raise SourceError(f"{where}: '{kind}' {'outside a block' if kind == 'end' else 'again'}")
            part, indent = ("both" if kind == "end" else kind), marker.group(1)
        elif part == "both":
            out.append(unasync_line(line, rules))
        elif part == "sync only":
            out.append(uncomment(line, indent, where))
    if part != "both":
        raise SourceError(f"{name}: a block is not closed with '# unasync: end'")
    return out


def import_statements(lines: list[str], start: int) -> tuple[list[list[str]], int]:
    """The top-level import statements from `start` on (blank lines between them skipped), each
    with its continuation lines (a parenthesised list); and the line after the last of them."""
    statements = []
    at = end = start
    while at < len(lines) and (lines[at].startswith(("import ", "from ")) or not lines[at].strip()):
        if lines[at].strip():
            last = at
            if lines[at].rstrip().endswith("("):
                while not lines[last].startswith(")"):
                    last += 1
            statements.append(lines[at : last + 1])
            at = end = last + 1
        else:
            at += 1
    return statements, end


def without_unused(statement: list[str], text: str) -> list[str] | None:
    """A one-line `from m import a, b as c` without the names `text` no longer uses (None when
    it uses none): the asyncio-only code that used them was left out. Left whole otherwise. A
    name only a comment or string still mentions stays: ruff then reports it (F401)."""
    line = statement[0]
    match = re.fullmatch(r"from (\S+) import ([\w ,]+)", line)
    if len(statement) > 1 or match is None or match.group(1) == "__future__":
        return statement
    names = [name.strip() for name in match.group(2).split(",")]
    used = [name for name in names if len(re.findall(rf"\b{name.split()[-1]}\b", text)) > 1]
    return [f"from {match.group(1)} import {', '.join(used)}"] if used else None


def section(statement: list[str]) -> int:
    """isort's sections: __future__, the standard library, third party (redis), this package."""
    module = statement[0].split()[1]
    if module == "__future__":
        return 0
    if module.startswith("."):
        return 3
    return 1 if module.split(".")[0] in sys.stdlib_module_names else 2


def import_key(statement: list[str]) -> tuple[int, bool, str]:
    """isort's order: by section; within one `import x` before `from x import y`, by module."""
    words = statement[0].split()
    return section(statement), words[0] == "from", words[1].lower()


def first_import(lines: list[str]) -> int:
    """The line of the first top-level import (not a docstring's example)."""
    in_string = False
    for number, line in enumerate(lines):
        if not in_string and line.startswith(("import ", "from ")):
            return number
        in_string ^= line.count('"""') % 2 == 1
    raise SourceError("no import")


def sort_imports(lines: list[str]) -> list[str]:
    """The imports at the top (up to the first other statement) sorted and grouped again as isort
    does (a renamed module may sort elsewhere, a block may have left a blank line), without the
    names no longer used."""
    first = first_import(lines)
    statements, end = import_statements(lines, first)
    text = "\n".join(lines)
    kept = [s for s in (without_unused(statement, text) for statement in statements) if s is not None]
    imports: list[str] = []
    last_section = None
    for statement in sorted(kept, key=import_key):
        if last_section is not None and section(statement) != last_section:
            imports.append("")
        imports.extend(statement)
        last_section = section(statement)
    return lines[:first] + imports + lines[end:]


def generate(source: str) -> str:
    """The sync twin of src/dlock/`source`, as it should be on disk."""
    lines = (PACKAGE / source).read_text().splitlines()
    up = FILES[source].count("/") < source.count("/")
    rules = RULES + ONE_LEVEL_UP if up else RULES
    return header(source) + "\n".join(sort_imports(unasync_lines(lines, source, rules))) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    check = parser.parse_args().check
    try:
        wanted = {target: generate(source) for source, target in FILES.items()}
    except SourceError as e:
        print(f"unasync: {e}", file=sys.stderr)
        return 2
    stale = [
        target
        for target, text in wanted.items()
        if not (PACKAGE / target).exists() or (PACKAGE / target).read_text() != text
    ]
    for target in stale:
        if check:
            print(f"unasync: src/dlock/{target} is stale: run `python tools/unasync.py` in python/", file=sys.stderr)
        else:
            (PACKAGE / target).write_text(wanted[target])
            print(f"unasync: wrote src/dlock/{target}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
