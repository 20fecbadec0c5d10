"""Runs one example of the docs as its fence says (examples.py) and says how it differs from its
page, if it does. Examples run in a scratch directory holding links to the repository's parts
(`target/`, `python/`, `node/`, ...), with `dlock` and a `redis-cli` that defaults to the
example's first server on the PATH, `python3` being the test venv's and `import "dlock"`
resolving to node/."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from examples import ROOT, Example, differences
from fleet import REDIS_CLI, REDIS_SERVER, TLS_PASSWORD, Fleet, free_port, stop_group

VENV_PYTHON = ROOT / "python/.venv/bin/python"
LINKED = ("target", "python", "node", "client", "cli", "monitoring", "conformance", "docs", "redis.conf.example")
#: What a `$ ` line and a redis-cli prompt look like in a transcript.
PROMPT = re.compile(r"^\$ (.*)$")
CLI_PROMPT = re.compile(r"^(127\.0\.0\.1:\d+)> (.*)$")
MARK = "\x1edlock-docs-mark\x1e"


class Scratch:
    """The directory, environment and PATH an example runs with."""

    def __init__(self, fleet: Fleet, fixture: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="dlock-docs-run-"))
        for name in LINKED:
            (self.dir / name).symlink_to(ROOT / name)
        (self.dir / "node_modules").mkdir()
        (self.dir / "node_modules/dlock").symlink_to(ROOT / "node")
        bin = self.dir / ".bin"
        bin.mkdir()
        (bin / "dlock").symlink_to(ROOT / "target/release/dlock")
        (bin / "python3").symlink_to(VENV_PYTHON)
        (bin / "python").symlink_to(VENV_PYTHON)
        first = fleet.nodes[0].port
        wrapper = f'#!/bin/sh\nexec {shlex.quote(REDIS_CLI)} -p {first} "$@"\n'
        (bin / "redis-cli").write_text(wrapper)
        (bin / "redis-cli").chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("DLOCK_", "REDISCLI_"))}
        self.env["PATH"] = f"{bin}:{os.environ['PATH']}"
        self.env["DLOCK_MODULE"] = str(ROOT / "target/release/libdlock.so")
        if fixture == "one":  # what `dlock` reaches without --nodes: make run's server
            self.env["DLOCK_NODES"] = f"redis://127.0.0.1:{first}"
        if fixture == "tls":  # the certificates and the password file the pages name
            pki = fleet.pki
            assert pki is not None, "the TLS fleet has certificates"
            for name in ("ca.crt", "client.crt", "client.key"):
                shutil.copy(pki / name, self.dir / name)
            (self.dir / "locker.pass").write_text(TLS_PASSWORD + "\n")
            self.env["DLOCK_PASSWORD_FOR_EXAMPLES"] = TLS_PASSWORD

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


#: Ports a page names for programs an example starts itself (redis_exporter's), each given a
#: free one per example.
OWN_PORTS = ("9121",)


class Ports(Fleet):
    """A fleet's addresses, and the example's own ports, replaced alike."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(fleet.nodes, fleet.documented, fleet.cluster, fleet.pki)
        self.fleet = fleet
        self.own = {p: str(free_port()) for p in OWN_PORTS}

    def into(self, text: str) -> str:
        for documented, actual in self.own.items():
            text = re.sub(rf"(?<![\w.]){documented}(?![\w])", actual, text)
        return self.fleet.into(text)

    def back(self, text: str) -> str:
        for documented, actual in self.own.items():
            text = re.sub(rf"(?<![\w.]){actual}(?![\w])", documented, text)
        return self.fleet.back(text)


def run(example: Example, fleet: Fleet | None, fixture: str) -> str | None:
    """None when the example does what its page says; else what went wrong."""
    if example.mode == "example":
        return rust_example(example)
    if example.mode == "make":
        return make_lines(example)
    if example.mode == "redis.conf":
        return redis_conf(example)
    assert fleet is not None, f"{example.where}: a {example.mode} block runs against servers"
    fleet.ready_for_an_example()
    fleet = Ports(fleet)
    scratch = Scratch(fleet, fixture)
    try:
        if example.mode == "session":
            return session(example, fleet, scratch)
        return program(example, fleet, scratch)
    finally:
        scratch.remove()


def program(example: Example, fleet: Fleet, scratch: Scratch) -> str | None:
    """A `run` block: its exit status, and what it printed against the `output` block after it."""
    text = fleet.into(example.text)
    language = "cjs" if example.options.get("as") == "cjs" else example.lang
    suffix, command = {
        "python": (".py", [str(VENV_PYTHON)]),
        "js": (".mjs", ["node"]),
        "cjs": (".cjs", ["node"]),
    }.get(language, (".sh", ["bash", "-e", "-o", "pipefail"]))
    path = scratch.dir / f"example{suffix}"
    path.write_text(text + "\n")
    limit = float(example.options.get("timeout", "60"))
    process = subprocess.Popen(
        [*command, path.name], cwd=scratch.dir, env=scratch.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        stop_group(process)
        return f"{example.where}: did not exit by itself within {limit:.0f} s (a close() missing?)"
    finally:
        stop_group(process, grace=0.5)
    printed = fleet.back(out.decode(errors="replace"))
    expected = int(example.options.get("exit", "0"))
    if process.returncode != expected:
        return f"{example.where}: exit {process.returncode}, expected {expected}\n{printed}"
    if example.output is not None:
        wrong = differences(example.output, printed)
        return None if wrong is None else f"{example.where}: printed otherwise\n{wrong}"
    return None


def transcript(text: str) -> list[tuple[str, list[str]]]:
    """(command, the lines it prints) for each `$ ` or `host:port> ` line of a transcript."""
    steps: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        shell, cli = PROMPT.match(line), CLI_PROMPT.match(line)
        if shell:
            steps.append((shell.group(1), []))
        elif cli:
            port = cli.group(1).rsplit(":", 1)[1]
            args = " ".join(shlex.quote(a) for a in shlex.split(cli.group(2)))
            steps.append((f"{shlex.quote(REDIS_CLI)} --no-raw -p {port} {args}", []))
        elif steps and steps[-1][0].endswith("\\") and not steps[-1][1]:
            steps[-1] = (steps[-1][0] + "\n" + line.removeprefix("> "), [])
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first command: {line!r}")
    return steps


def session(example: Example, fleet: Fleet, scratch: Scratch) -> str | None:
    """A transcript: the commands run in one shell, each one's output compared with its page."""
    steps = transcript(example.text)
    script = ["exec 2>&1"]
    for command, _ in steps:
        script += [fleet.into(command), f"__rc=$?; printf '\\n{MARK}\\n'; (exit $__rc)"]
    limit = float(example.options.get("timeout", "120"))
    process = subprocess.Popen(
        ["bash", "-c", "\n".join(script)], cwd=scratch.dir, env=scratch.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        stop_group(process)
        return f"{example.where}: the session did not end within {limit:.0f} s"
    finally:
        stop_group(process, grace=0.5)
    printed = fleet.back(out.decode(errors="replace")).split(f"\n{MARK}\n")
    for i, (command, expected) in enumerate(steps):
        got = printed[i] if i < len(printed) else "(the session ended before this command)"
        wrong = differences("\n".join(expected), got)
        if wrong is not None:
            return f"{example.where}: `{command}` printed otherwise\n{wrong}"
    return None


def region(path: Path, name: str | None) -> str:
    """A file, or the part of it between `// docs: NAME` and `// docs: end`, dedented."""
    text = path.read_text()
    if name is None:
        return text.rstrip("\n")
    found = re.search(rf"^[ \t]*// docs: {re.escape(name)}\n(.*?)^[ \t]*// docs: end\n", text, re.M | re.S)
    if found is None:
        raise ValueError(f"{path}: no region {name!r}")
    return textwrap.dedent(found.group(1)).rstrip("\n")


def go_example(example: Example) -> str | None:
    """A Go block is an example program's text (`make go-test` builds and runs go/examples/)."""
    path = ROOT / example.options["example"]
    if not (path.parent.parent.name == "examples" and path.suffix == ".go" and path.exists()):
        return f"{example.where}: {example.options['example']} is not a Go example (go/examples/*/main.go)"
    if example.text + "\n" != path.read_text():
        return f"{example.where}: the block differs from {example.options['example']}"
    return None


def java_example(example: Example) -> str | None:
    """A Java block is a test source of `java/` or a region of one (`mvn verify` compiles it, and
    runs it: a region of a JUnit test, or a program a test runs, as examples/QuickstartTest)."""
    target, _, name = example.options["example"].partition("#")
    path = ROOT / target
    if not (target.startswith("java/src/test/") and path.suffix == ".java" and path.exists()):
        return f"{example.where}: {target} is not a Java test source (java/src/test/**/*.java[#region])"
    if example.text.rstrip("\n") != region(path, name or None):
        return f"{example.where}: the block differs from {target}#{name} (python3 tests/docs/examples.py --bless)"
    return None


def rust_example(example: Example) -> str | None:
    """A Rust block is a compiled example's text (cargo builds client/examples/ with the tests)."""
    if example.lang == "go":
        return go_example(example)
    if example.lang == "java":
        return java_example(example)
    target, _, name = example.options["example"].partition("#")
    path = ROOT / target
    if not (path.parent.name == "examples" and path.suffix == ".rs" and path.exists()):
        return f"{example.where}: {target} is not a cargo example (client/examples/*.rs)"
    if example.text.rstrip("\n") != region(path, name or None):
        where = f"{target}{'#' + name if name else ''}"
        return f"{example.where}: the block differs from {where} (python3 tests/docs/examples.py --bless)"
    binary = ROOT / "target/release/examples" / path.stem
    if not binary.exists() or binary.stat().st_mtime < path.stat().st_mtime:
        return f"{example.where}: {path.stem} is not built from its current source"
    return None


#: The make targets that start servers (foreground), and the variable that moves their ports.
SERVERS = {"run": ("REDIS_PORT", 1), "cluster": ("CLUSTER_PORTS", 5), "redis-cluster": ("REDIS_CLUSTER_PORTS", 6)}


def make_lines(example: Example) -> str | None:
    """`make TARGET` lines: server targets start and answer on every port; others expand."""
    for line in example.text.split("\n"):
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "make" or len(words) < 2:
            return f"{example.where}: {line!r} is not `make TARGET`"
        target = words[1]
        wrong = serve(example, target) if target in SERVERS else expand(example, target)
        if wrong:
            return wrong
    return None


def expand(example: Example, target: str) -> str | None:
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
    return None if done.returncode == 0 else f"{example.where}: make -n {target}: {done.stderr.strip()}"


def serve(example: Example, target: str) -> str | None:
    variable, count = SERVERS[target]
    ports = [free_port(55536 if target == "redis-cluster" else 65536) for _ in range(count)]
    setting = f"{variable}={' '.join(map(str, ports))}"
    process = subprocess.Popen(
        ["make", "--no-print-directory", target, setting], cwd=ROOT, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180  # make builds first (a no-op once built)
        answering: set[int] = set()
        while answering != set(ports):
            if process.poll() is not None or time.monotonic() > deadline:
                out = process.stdout.read().decode(errors="replace") if process.stdout else ""
                return f"{example.where}: make {target} did not serve {ports}:\n{out[-2000:]}"
            for port in set(ports) - answering:
                ping = subprocess.run([REDIS_CLI, "-p", str(port), "PING"], capture_output=True, text=True)
                if ping.stdout.strip() == "PONG":
                    answering.add(port)
            time.sleep(0.2)
        if target == "redis-cluster":
            info = [REDIS_CLI, "-p", str(ports[0]), "CLUSTER", "INFO"]
            deadline = time.monotonic() + 30
            while "cluster_state:ok" not in subprocess.run(info, capture_output=True, text=True).stdout:
                if time.monotonic() > deadline:
                    return f"{example.where}: make redis-cluster made no working cluster"
                time.sleep(0.2)
        return None
    finally:
        stop_group(process, grace=5.0)


def redis_conf(example: Example) -> str | None:
    """Configuration lines: a server starts with them (paths to this clone) and loads dlock."""
    scratch = Path(tempfile.mkdtemp(prefix="dlock-docs-conf-"))
    port = free_port()
    conf = example.text.replace("/path/to/dlock", str(ROOT))
    (scratch / "redis.conf").write_text(conf + f'\nport {port}\nbind 127.0.0.1\ndir {scratch}\nsave ""\n')
    process = subprocess.Popen(
        [REDIS_SERVER, str(scratch / "redis.conf")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            listed = subprocess.run([REDIS_CLI, "-p", str(port), "MODULE", "LIST"], capture_output=True, text=True)
            if "dlock" in listed.stdout:
                return None
            time.sleep(0.1)
        out = process.stdout.read().decode(errors="replace") if process.poll() is not None and process.stdout else ""
        return f"{example.where}: no server with the dlock module from these lines\n{out[-2000:]}"
    finally:
        stop_group(process, grace=2.0)
        shutil.rmtree(scratch, ignore_errors=True)
