"""tools/unasync.py, which generates the sync flavour from the asyncio one: the generated files
are up to date, and its rules, blocks and import sorting do what its docstring says."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "unasync.py"


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_sync_files_are_up_to_date() -> None:
    run = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr


def test_rules_and_blocks() -> None:
    source = [
        "class Lock:",
        "    # unasync: asyncio only",
        '    """Awaitable."""',
        "    # unasync: sync only",
        '    # """Sync, `await` untouched."""',
        "    #",
        "    # unasync: end",
        "    async def __aexit__(self) -> None:",
        "        async with self.guard:",
        "            await self.release(asyncio.Event())",
    ]
    assert tool().unasync_lines(source, "lock.py", tool().RULES) == [
        "class Lock:",
        '    """Sync, `await` untouched."""',
        "",
        "    def __exit__(self) -> None:",
        "        with self.guard:",
        "            self.release(threading.Event())",
    ]


@pytest.mark.parametrize(
    "source",
    [
        ["# unasync: sync only", "x = 1"],  # a sync-only line must be commented out
        ["# unasync: asyncio only", "x = 1"],  # not closed
        ["# unasync: end"],  # outside a block
        ["# unasync: sync only", "# unasync: sync only", "# unasync: end"],
    ],
)
def test_a_malformed_block_is_refused(source: list[str]) -> None:
    unasync = tool()
    with pytest.raises(unasync.SourceError):
        unasync.unasync_lines(source, "bad.py", unasync.RULES)


def test_imports_are_renamed_sorted_again_and_pruned() -> None:
    unasync = tool()
    source = [
        '"""Doc."""',
        "",
        "from __future__ import annotations",
        "",
        "import asyncio",
        "import contextlib",
        "from collections.abc import Awaitable, Callable",
        "",
        "from .._pure import commands as cmd",
        "from .._transport.aio.waits import Waits",
        "from .._pure.verdicts import Grant",
        "from .lock import Lock",
        "",
        "x: Callable[[], Awaitable[Grant]] = asyncio.Event, contextlib, cmd, Waits, Lock",
    ]
    assert unasync.sort_imports(unasync.unasync_lines(source, "m.py", unasync.RULES)) == [
        '"""Doc."""',
        "",
        "from __future__ import annotations",
        "",
        "import contextlib",
        "import threading",
        "from collections.abc import Callable",
        "",
        "from .._pure import commands as cmd",
        "from .._pure.verdicts import Grant",
        "from .._transport.sync.waits import Waits",
        "from .lock import Lock",
        "",
        "x: Callable[[], Grant] = threading.Event, contextlib, cmd, Waits, Lock",
    ]


def test_the_public_init_imports_one_level_up() -> None:
    unasync = tool()
    source = ["from .._async.manager import LockManager", "from ..errors import DlockError"]
    rules = unasync.RULES + unasync.ONE_LEVEL_UP
    assert unasync.unasync_lines(source, "__init__.py", rules) == [
        "from ._sync.manager import LockManager",
        "from .errors import DlockError",
    ]
