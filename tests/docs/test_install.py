"""The packages install from a clean clone as README.md says (its `install` blocks), and the
README's examples run with what was installed: the CLI from `cargo install`, the Python snippet in
a fresh venv, the Node snippet in a fresh app that ran `npm install <clone>/node`, and the Rust
snippet compiled in a new crate with the documented dependency lines.

The clone is `git clone` of this checkout with its uncommitted changes to tracked files applied:
what a clone of the commit about to be made holds (an untracked file is not in it, as in a
clone). Slow parts share a cache under target/: `cargo install` builds in target/release, and the new
crate, built in release there too, reuses what it compiled."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Fleets
from examples import ROOT, Example, blocks, differences
from fleet import fixture_for

README = [b for b in blocks(ROOT / "README.md")]
#: What README.md calls this clone in its install lines.
CLONE = "/path/to/dlock"


def readme(lang: str, mode: str, **options: str) -> Example:
    found = [
        b
        for b in README
        if b.lang == lang and b.mode == mode and all(b.options.get(k) == v for k, v in options.items())
    ]
    assert found, f"README.md has no ```{lang} {mode} block"
    return found[0]


def output_of(example: Example) -> str:
    """The `output` block right after `example` in README.md."""
    after = README[README.index(example) + 1]
    assert after.mode == "output", f"{example.where}: no output block after it"
    return after.text


def git(*args: str, cwd: Path = ROOT, input: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, input=input).stdout


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """(the clone, a fresh app directory with everything installed, its environment)."""
    top = Path(tempfile.mkdtemp(prefix="dlock-install-"))
    clone, app = top / "dlock", top / "app"
    git("clone", "-q", "--no-hardlinks", str(ROOT), str(clone))
    changes = git("diff", "HEAD", "--binary")
    if changes:
        git("apply", "--whitespace=nowarn", cwd=clone, input=changes)
    app.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DLOCK_", "npm_", "CARGO_TARGET_DIR"))}
    env["CARGO_INSTALL_ROOT"] = str(top / "cargo")
    env["CARGO_TARGET_DIR"] = str(ROOT / "target")  # the crates this tree already built
    env["PATH"] = f"{top / 'cargo/bin'}:{os.environ['PATH']}"
    subprocess.run(["npm", "init", "-y"], cwd=app, env=env, check=True, capture_output=True)
    for line in readme("sh", "install").text.split("\n"):
        command = line.split("  #")[0].strip().replace(CLONE, str(clone))
        if command:
            done = subprocess.run(["bash", "-c", command], cwd=app, env=env, capture_output=True, text=True)
            assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    yield clone, app, env
    shutil.rmtree(top, ignore_errors=True)


def test_the_cli_installed_by_cargo_has_the_version_of_every_package(app: tuple[Path, Path, dict[str, str]]) -> None:
    clone, _, env = app
    version = re.search(r'\[workspace.package\]\nversion = "([^"]+)"', (clone / "Cargo.toml").read_text())
    assert version is not None
    shown = subprocess.run(["dlock", "--version"], env=env, capture_output=True, text=True, check=True).stdout
    assert shown.strip() == f"dlock {version.group(1)}"
    assert shutil.which("dlock", path=env["PATH"]) == str(Path(env["CARGO_INSTALL_ROOT"]) / "bin/dlock")


def run_in_app(app: Path, env: dict[str, str], fleets: Fleets, example: Example, command: list[str], name: str) -> None:
    fixture = fixture_for(example.text, None)
    fleet = fleets.get(fixture)
    fleet.ready_for_an_example()
    (app / name).write_text(fleet.into(example.text) + "\n")
    done = subprocess.run([*command, name], cwd=app, env=env, capture_output=True, text=True, timeout=60)
    printed = fleet.back(done.stdout + done.stderr)
    assert done.returncode == 0, printed
    assert differences(output_of(example), printed) is None, differences(output_of(example), printed)


def test_the_readme_python_example_runs_in_the_venv_pip_made(
    app: tuple[Path, Path, dict[str, str]], fleets: Fleets
) -> None:
    _, directory, env = app
    example = readme("python", "run")
    run_in_app(directory, env, fleets, example, [str(directory / ".venv/bin/python")], "example.py")


def test_the_readme_node_example_runs_in_an_app_that_installed_the_clone(
    app: tuple[Path, Path, dict[str, str]], fleets: Fleets
) -> None:
    _, directory, env = app
    installed = directory / "node_modules/dlock"
    assert (installed / "dist/esm/index.js").exists() and (installed / "dist/cjs/index.js").exists()
    run_in_app(directory, env, fleets, readme("js", "run"), ["node"], "example.mjs")
    script = "const { LockManager } = require('dlock'); new LockManager(['redis://127.0.0.1:1']).close();"
    subprocess.run(["node", "-e", script], cwd=directory, env=env, check=True, timeout=30)


def test_the_readme_rust_example_compiles_in_a_new_crate_with_the_documented_dependencies(
    app: tuple[Path, Path, dict[str, str]],
) -> None:
    clone, directory, env = app
    crate = directory / "rust-app"
    (crate / "src").mkdir(parents=True)
    dependencies = readme("toml", "install").text.replace(CLONE, str(clone))
    # Built in release with the clone's release profile, in the target directory `cargo install`
    # used (the app fixture's env): the client and its dependencies, compiled there for the CLI
    # with the same features and versions, are reused instead of compiled again (a CI minute).
    profile = "[profile.release]\ndebug = 1\n"
    manifest = '[package]\nname = "rust-app"\nversion = "0.1.0"\nedition = "2021"\n\n' + dependencies + "\n\n" + profile
    (crate / "Cargo.toml").write_text(manifest)
    (crate / "src/main.rs").write_text(readme("rust", "example").text + "\n")
    shutil.copy(clone / "Cargo.lock", crate / "Cargo.lock")  # the versions this tree is tested with
    done = subprocess.run(["cargo", "build", "--release", "-q"], cwd=crate, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{shlex.join(['cargo', 'build', '--release'])} in a new crate:\n{done.stderr[-4000:]}"
