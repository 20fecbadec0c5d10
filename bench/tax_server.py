"""The servers `make bench-tax` compares (bench/tax.py, bench/tax_timed.py): the same binary with
the module loaded and one lock in its keyspace, or without it and one plain key with the same TTL
(the same keyspace state: Redis skips TTL lookups while no key has one). Where the machine has two
CPUs or more, a server runs on CPU 1 and the tools that drive it on CPU 0, so that neither takes
the other's core in the middle of a measure."""

import os
import shutil
import subprocess
import time

from resp_util import free_port

OWNER = "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f"
RDB_KEYS = 1_000_000
SPLIT = len(os.sched_getaffinity(0)) >= 2 and shutil.which("taskset") is not None


def pinned(argv, cpu):
    """argv run on one CPU, where there are two to split between the server and its driver."""
    return ["taskset", "-c", str(cpu), *argv] if SPLIT else list(argv)


def cpu_ns(pid):
    """The CPU time a process's main thread has had, in nanoseconds (the scheduler's own count,
    not the tick-rounded one of /proc/PID/stat)."""
    with open(f"/proc/{pid}/task/{pid}/schedstat") as stat:
        return int(stat.read().split()[0])


class Server:
    """A redis-server on a free port and a temp dir, with or without the module (then with one
    lock in its keyspace), optionally under callgrind."""

    def __init__(self, binary, module, directory, callgrind=None, rdb=None):
        self.port, self.dir, self.module = free_port(), directory, module
        argv = [binary, "--port", str(self.port), "--save", "", "--appendonly", "no",
                "--dir", directory, "--logfile", "server.log", "--enable-debug-command", "yes"]
        if rdb:
            argv += ["--dbfilename", rdb]
        if module:
            argv += ["--loadmodule", module]
        if callgrind:
            argv = ["valgrind", "--tool=callgrind", "--cache-sim=yes",
                    f"--callgrind-out-file={callgrind}"] + argv
        else:
            argv = pinned(argv, 1)  # taskset execs the server: the same pid
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready(300 if callgrind else 60)
        if not rdb:
            self.one_lock()

    def one_lock(self):
        """The one lock (with the module); without it a plain key with the same TTL, so that both
        keyspaces hold one key with a TTL (Redis skips TTL lookups while none has one)."""
        if self.module:
            self.cli("DLOCK.ACQUIRE", "the-one-lock", OWNER, 86_400_000)
        else:
            self.cli("SET", "the-one-lock", OWNER, "PX", 86_400_000)

    def wait_ready(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            reply = subprocess.run(["redis-cli", "-p", str(self.port), "ping"],
                                   capture_output=True, text=True).stdout
            if reply.strip() == "PONG":
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"server on port {self.port} did not start")

    def cli(self, *args):
        out = subprocess.run(pinned(["redis-cli", "-p", str(self.port), *map(str, args)], 0),
                             capture_output=True, text=True, check=True).stdout
        if out.startswith(("ERR", "WRONGTYPE", "NOPERM")):
            raise RuntimeError(f"{args[0]}: {out.strip()}")
        return out

    def pipe(self, path):
        with open(path, "rb") as commands:
            subprocess.run(pinned(["redis-cli", "-p", str(self.port), "--pipe"], 0), stdin=commands,
                           stdout=subprocess.DEVNULL, check=True)

    def cpu_ns(self):
        return cpu_ns(self.process.pid)

    def stop(self):
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
                       capture_output=True)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def make_rdb(binary, module, directory, with_lock, keys=RDB_KEYS):
    server = Server(binary, module if with_lock else None, directory, rdb="dump.rdb")
    server.cli("DEBUG", "POPULATE", keys, "key", 16)
    server.one_lock()
    server.cli("SAVE")
    server.stop()
