#!/usr/bin/env python3
"""What loading dlock costs traffic that never touches a lock (docs/bench.md section 8,
`make bench-tax`): the same server binary with the module loaded and one lock in the keyspace,
against it without the module and one plain key with the same TTL instead (the same keyspace
state), measured in one run with the order alternated.

- instructions and L1 instruction-cache misses per `SET NX PX` and per `DEL` (callgrind, the whole
  server, its start and shutdown subtracted): goals <= 1.01x and <= 1.10x;
- server time of EXPIRE / PEXPIRE / PERSIST on 200,000 plain keys (INFO commandstats): <= 1.02x;
- loading an RDB of 1,000,000 plain keys (the server's own "DB loaded from disk" line): <= 1.02x;
- `redis-benchmark -t set,get,incr,lpush,hset -P 16` requests per second: >= 0.99x.

Timed measures are medians of ROUNDS pairs, each pair run back to back with the order
alternated, so that both sides of a ratio see the same background load.

usage: tax.py MODULE SERVER [SERVER ...]   (needs valgrind, redis-cli and redis-benchmark)
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from resp_util import command, free_port, resp

ROUNDS = 9
CALLS = 50_000
TTL_KEYS = 200_000
RDB_KEYS = 1_000_000
OWNER = "6f1c2a9e3b7d4c5e9a8f0d2e4b6c8a1f"


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
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server on port {self.port} did not start")

    def cli(self, *args):
        out = subprocess.run(["redis-cli", "-p", str(self.port), *map(str, args)],
                             capture_output=True, text=True, check=True).stdout
        if out.startswith(("ERR", "WRONGTYPE", "NOPERM")):
            raise RuntimeError(f"{args[0]}: {out.strip()}")
        return out

    def pipe(self, path):
        with open(path, "rb") as commands:
            subprocess.run(["redis-cli", "-p", str(self.port), "--pipe"], stdin=commands,
                           stdout=subprocess.DEVNULL, check=True)

    def stop(self):
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"],
                       capture_output=True)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def write_commands(path, name, *args):
    """CALLS commands `name key:i *args`, as RESP, for redis-cli --pipe."""
    with open(path, "wb") as out:
        for i in range(CALLS):
            out.write(resp(name, f"key:{i}", *args))


def numbers(line):
    line = re.sub(r"\([^)]*\)", "", line)  # the percentages
    return [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", line)[:2]]


def callgrind_totals(path, function="call"):
    """Instructions and L1 instruction misses of a callgrind profile: inside Redis's `call()`
    (every command's execution: the command, its keyspace events, module callbacks, replication),
    and in the whole run (timers and the server's cron included, which run by the clock and so
    more often for a run that valgrind happened to make longer)."""
    text = subprocess.run(["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", "--show=Ir,I1mr",
                           path], capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    whole = numbers(next(l for l in lines if "PROGRAM TOTALS" in l))
    found = next((l for l in lines if re.search(rf"[?\w]:{function} ", l)), None)
    if found is None:
        raise RuntimeError(f"{path}: no function {function} (a server without symbols?)")
    return (*numbers(found), *whole)


def profile(binary, module, files, tmp, name):
    """Instructions and L1i misses of a server that ran `files` (redis-cli --pipe inputs)."""
    out = os.path.join(tmp, f"{name}.callgrind")
    with tempfile.TemporaryDirectory() as directory:
        server = Server(binary, module, directory, callgrind=out)
        for path in files:
            server.pipe(path)
        server.stop()
    return callgrind_totals(out)


def ttl_instructions(binary, module, tmp):
    """Instructions inside call() per EXPIRE / PEXPIRE / PERSIST on CALLS plain keys, module and
    one lock / no module (the clock-free twin of the timed EXPIRE-family measure)."""
    fill, ttl = os.path.join(tmp, "fill.resp"), os.path.join(tmp, "ttl.resp")
    write_commands(fill, "SET", "v")
    with open(ttl, "wb") as out:
        for i in range(CALLS):
            out.write(resp("EXPIRE", f"key:{i}", 3600) + resp("PEXPIRE", f"key:{i}", 7_200_000)
                      + resp("PERSIST", f"key:{i}"))
    per = {}
    for side, mod in (("module", module), ("plain", None)):
        before = profile(binary, mod, [fill], tmp, f"{side}-fill")
        after = profile(binary, mod, [fill, ttl], tmp, f"{side}-ttl")
        per[side] = (after[0] - before[0]) / (3 * CALLS)
    return per["module"], per["plain"]


def load_instructions(binary, module, tmp):
    """Instructions of loading an RDB of CALLS * 4 plain keys (inclusive of the server's
    loadDataFromDisk), module and one lock / no module (the clock-free twin of the timed load)."""
    per = {}
    for side, with_lock in (("module", True), ("plain", False)):
        with tempfile.TemporaryDirectory() as directory:
            make_rdb(binary, module, directory, with_lock, keys=4 * CALLS)
            out = os.path.join(tmp, f"{side}-load.callgrind")
            server = Server(binary, module if with_lock else None, directory, callgrind=out,
                            rdb="dump.rdb")
            server.stop()
            per[side] = callgrind_totals(out, "loadDataFromDisk")[0] / (4 * CALLS)
    return per["module"], per["plain"]


def instructions(binary, module, tmp):
    """Per call, for SET NX PX and DEL: {(op, side): (instructions, L1i misses inside call(),
    the same over the whole server)}."""
    sets, dels = os.path.join(tmp, "set.resp"), os.path.join(tmp, "del.resp")
    write_commands(sets, "SET", OWNER, "NX", "PX", 3_600_000)
    write_commands(dels, "DEL")
    results = {}
    for side, mod in (("module", module), ("plain", None)):
        base = profile(binary, mod, [], tmp, f"{side}-base")
        after_set = profile(binary, mod, [sets], tmp, f"{side}-set")
        after_del = profile(binary, mod, [sets, dels], tmp, f"{side}-del")
        per = lambda a, b: tuple((x - y) / CALLS for x, y in zip(a, b))
        results[("SET NX PX", side)] = per(after_set, base)
        results[("DEL", side)] = per(after_del, after_set)
    return results


def usec_per_call(server, stat):
    for line in server.cli("INFO", "commandstats").splitlines():
        if line.startswith(f"cmdstat_{stat}:"):
            return float(line.split("usec_per_call=")[1].split(",")[0])
    return float("nan")


def ttl_round(server, tmp):
    """usec per call of EXPIRE, PEXPIRE and PERSIST over TTL_KEYS plain keys (and the one lock,
    or its plain twin)."""
    server.cli("FLUSHDB")
    server.one_lock()
    server.cli("DEBUG", "POPULATE", TTL_KEYS, "key")
    server.cli("CONFIG", "RESETSTAT")
    path = os.path.join(tmp, f"ttl-{server.port}.resp")
    with open(path, "wb") as out:
        for i in range(TTL_KEYS):
            out.write(resp("EXPIRE", f"key:{i}", 3600) + resp("PEXPIRE", f"key:{i}", 7_200_000)
                      + resp("PERSIST", f"key:{i}"))
    server.pipe(path)
    server.one_lock()
    return sum(usec_per_call(server, s) for s in ("expire", "pexpire", "persist"))


def alternated(measure_module, measure_plain):
    """ROUNDS pairs, the order reversed every other round: the median ratio module / plain."""
    ratios = []
    for round_ in range(ROUNDS):
        if round_ % 2 == 0:
            m, p = measure_module(), measure_plain()
        else:
            p, m = measure_plain(), measure_module()
        ratios.append(m / p)
    return statistics.median(ratios), min(ratios), max(ratios)


def expire_family(binary, module, tmp):
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        with_module, plain = Server(binary, module, d1), Server(binary, None, d2)
        try:
            return alternated(lambda: ttl_round(with_module, tmp), lambda: ttl_round(plain, tmp))
        finally:
            with_module.stop()
            plain.stop()


def make_rdb(binary, module, directory, with_lock, keys=RDB_KEYS):
    server = Server(binary, module if with_lock else None, directory, rdb="dump.rdb")
    server.cli("DEBUG", "POPULATE", keys, "key", 16)
    server.one_lock()
    server.cli("SAVE")
    server.stop()


def load_seconds(binary, module, directory):
    """Starts a server on the RDB in `directory`; the seconds its log says loading took."""
    log = os.path.join(directory, "server.log")
    if os.path.exists(log):
        os.remove(log)
    server = Server(binary, module, directory, rdb="dump.rdb")
    server.stop()
    with open(log) as text:
        found = re.search(r"DB loaded from disk: ([\d.]+) seconds", text.read())
    if not found:
        raise RuntimeError("no load time in the server's log")
    return float(found.group(1))


def rdb_load(binary, module):
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        make_rdb(binary, module, d1, with_lock=True)
        make_rdb(binary, module, d2, with_lock=False)
        return alternated(lambda: load_seconds(binary, module, d1),
                          lambda: load_seconds(binary, None, d2))


TESTS = ("set", "get", "incr", "lpush", "hset")


def benchmark_rps(server, test):
    out = subprocess.run(["redis-benchmark", "-p", str(server.port), "-t", test, "-P", "16",
                          "-n", "200000", "-r", "100000", "-q"],
                         capture_output=True, text=True, check=True).stdout
    found = re.search(r"([\d.]+) requests per second", out.replace("\r", "\n"))
    if not found:
        raise RuntimeError(f"redis-benchmark -t {test}: {out!r}")
    return float(found.group(1))


def throughput(binary, module):
    """Per redis-benchmark test, ROUNDS pairs of runs a second apart, the order alternated: the
    median ratio module / plain (pairs close in time see the same background load)."""
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        with_module, plain = Server(binary, module, d1), Server(binary, None, d2)
        try:
            return {test.upper(): alternated(lambda: benchmark_rps(with_module, test),
                                             lambda: benchmark_rps(plain, test))
                    for test in TESTS}
        finally:
            with_module.stop()
            plain.stop()


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    name = "Valkey" if "alkey" in out else "Redis"
    found = re.search(r"v=(\S+)", out)
    return f"{name} {found.group(1) if found else '?'}"


def report(binary, module):
    print(f"\n### {version(binary)} ({binary})\n")
    print("| measure | module loaded, one lock / no module | goal | |")
    print("|---|---|---|---|")
    verdict = lambda ok: "met" if ok else "**missed**"
    with tempfile.TemporaryDirectory() as tmp:
        calls = instructions(binary, module, tmp)
        for op in ("SET NX PX", "DEL"):
            m, p = calls[(op, "module")], calls[(op, "plain")]
            for at, where in ((0, "the command (inside call())"), (2, "the whole server")):
                (mi, m1), (pi, p1) = m[at:at + 2], p[at:at + 2]
                print(f"| {op} instructions per call, {where} | {mi / pi:.3f}x ({mi:.0f} / {pi:.0f}) | <= 1.01x | {verdict(mi / pi <= 1.01)} |")
                print(f"| {op} L1i misses per call, {where} | {m1 / p1:.3f}x ({m1:.2f} / {p1:.2f}) | <= 1.10x | {verdict(m1 / p1 <= 1.10)} |")
        m, p = ttl_instructions(binary, module, tmp)
        print(f"| EXPIRE / PEXPIRE / PERSIST instructions per call (inside call()), {CALLS:,} plain keys | {m / p:.3f}x ({m:.0f} / {p:.0f}) | <= 1.02x | {verdict(m / p <= 1.02)} |")
        med, low, high = expire_family(binary, module, tmp)
        print(f"| EXPIRE + PEXPIRE + PERSIST server time, {TTL_KEYS:,} plain keys | {med:.3f}x ({low:.3f}-{high:.3f}) | <= 1.02x | {verdict(med <= 1.02)} |")
        m, p = load_instructions(binary, module, tmp)
        print(f"| RDB load instructions per key, {4 * CALLS:,} plain keys | {m / p:.3f}x ({m:.0f} / {p:.0f}) | <= 1.02x | {verdict(m / p <= 1.02)} |")
    med, low, high = rdb_load(binary, module)
    print(f"| RDB load time, {RDB_KEYS:,} plain keys | {med:.3f}x ({low:.3f}-{high:.3f}) | <= 1.02x | {verdict(med <= 1.02)} |")
    for test, (med, low, high) in throughput(binary, module).items():
        print(f"| redis-benchmark {test} -P 16, requests/s | {med:.3f}x ({low:.3f}-{high:.3f}) | >= 0.99x | {verdict(med >= 0.99)} |")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    module = os.path.realpath(sys.argv[1])
    print(f"Medians of {ROUNDS} alternated rounds; callgrind counts over {CALLS:,} calls.")
    for binary in sys.argv[2:]:
        report(binary, module)


if __name__ == "__main__":
    main()
