"""A PostgreSQL of the tests' own: `initdb` in a temp dir, the server on a free loopback port with
its socket in that dir, stopped and removed at the end. No system service is used. initdb refuses
to run as root, so as root the server runs as the `postgres` user (Debian's package makes it).
`make python-venv` installs Debian's postgresql when missing."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

from cluster import free_port


def binaries() -> str:
    """The newest installed PostgreSQL's bin directory."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (make python-venv installs Debian's postgresql)")
    return os.path.dirname(found[-1])


class Postgres:
    def __init__(self) -> None:
        self.bin = binaries()
        self.dir = tempfile.mkdtemp(prefix="dlock-pg-")
        self.port = free_port()
        self.user = None if os.getuid() != 0 else pwd.getpwnam("postgres")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=dlock dbname=postgres"

    def _run_as(self) -> dict[str, object]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def start(self) -> Postgres:
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        data = os.path.join(self.dir, "data")
        initdb = [f"{self.bin}/initdb", "-D", data, "-U", "dlock", "-A", "trust", "--no-sync", "-E", "UTF8"]
        done = subprocess.run(initdb, capture_output=True, timeout=120, **self._run_as())  # type: ignore[call-overload]
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.decode()}")
        server = [f"{self.bin}/postgres", "-D", data, "-p", str(self.port), "-k", self.dir]
        server += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off"]
        log = open(os.path.join(self.dir, "postgres.log"), "wb")  # noqa: SIM115 (kept for the server's life)
        self.process = subprocess.Popen(server, stdout=log, stderr=log, **self._run_as())  # type: ignore[call-overload]
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ready = subprocess.run(
                [f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            )
            if ready.returncode == 0:
                return
            if self.process is not None and self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"postgres did not start; see {self.dir}/postgres.log")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
