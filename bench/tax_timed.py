"""The timed half of `make bench-tax` (bench/tax.py counts instructions): server time of the
EXPIRE family, RDB load time and redis-benchmark's requests per second, the module loaded with
one lock against no module.

Why it is built this way: on the 2-core VM these were first measured on, the same measure of the
same binary moves 10-15% from one run to the next (memory layout and each process's random hash
seed, and a shared host), and two server processes differ by a few percent for their whole life.
A goal of 1-2% is resolved only by many short measures: each a pair of module and plain, run
back to back in alternating order (so both see the same moment of the machine), spread over
fresh server processes. The ratio is the module's total over the plain total; the "+-" is 1.96
standard errors of the ratios of the server pairs (see Estimate), the resolution of that run."""

import math
import os
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import time

from resp_util import resp
from tax_server import Server, make_rdb, pinned

TTL_KEYS = 200_000
TTL_CHUNK = 5_000  # keys per measure: 15,000 commands, ~10 ms
TTL_SERVERS, TTL_PAIRS = 16, 50  # fresh server pairs, measures per server pair
LOAD_KEYS, LOAD_PAIRS = 200_000, 150
BENCH_WINDOW, BENCH_SERVERS, BENCH_PAIRS = 0.03, 8, 50
TESTS = ("set", "get", "incr", "lpush", "hset")


class Estimate:
    """Module / plain over pairs of measures, grouped by the pair of server processes that made
    them: the ratio of the totals, and its resolution from the groups' ratios (a process's hash
    seed and layout tilt all of its measures alike, so a group, not a pair, is one sample)."""

    def __init__(self):
        self.groups = []

    def group(self):
        """The (module, plain) lists of a new pair of server processes."""
        self.groups.append(([], []))
        return self.groups[-1]

    def ratio(self):
        return sum(sum(m) for m, _ in self.groups) / sum(sum(p) for _, p in self.groups)

    def resolution(self):
        ratios = [sum(m) / sum(p) for m, p in self.groups]
        return 1.96 * statistics.stdev(ratios) / math.sqrt(len(ratios))

    def __str__(self):
        pairs = sum(len(m) for m, _ in self.groups)
        return f"{self.ratio():.3f}x +-{self.resolution():.3f} ({pairs} pairs, {len(self.groups)} server pairs)"


def alternated(pairs, measure_module, measure_plain, group, first=0):
    """`pairs` pairs of measures into `group`, the order reversed every other pair (the module
    first in pair `first`)."""
    module, plain = group
    for n in range(first, first + pairs):
        if n % 2 == 0:
            module.append(measure_module())
            plain.append(measure_plain())
        else:
            plain.append(measure_plain())
            module.append(measure_module())


class Pipe:
    """A connection that sends a batch of commands and reads their replies (one line each)."""

    def __init__(self, server):
        self.server, self.sock = server, socket.create_connection(("127.0.0.1", server.port))

    def send(self, data, replies):
        self.sock.sendall(data)
        while replies > 0:
            replies -= self.sock.recv(1 << 20).count(b"\r\n")

    def info(self, section):
        self.sock.sendall(resp("INFO", section))
        text = b""
        while b"\r\n" not in text:
            text += self.sock.recv(1 << 20)
        length = int(text[1:text.index(b"\r\n")])  # a bulk string: $length, then the text
        while len(text) < text.index(b"\r\n") + 2 + length + 2:
            text += self.sock.recv(1 << 20)
        return text

    def usec(self, names):
        """The total microseconds INFO commandstats gives the commands `names`."""
        found = re.findall(rb"cmdstat_(\w+):calls=\d+,usec=(\d+)", self.info("commandstats"))
        return sum(int(usec) for name, usec in found if name.decode() in names)


def ttl_batches():
    batches = []
    for start in range(0, TTL_KEYS, TTL_CHUNK):
        batches.append(b"".join(resp("EXPIRE", f"key:{i}", 3600) + resp("PEXPIRE", f"key:{i}", 7_200_000)
                                + resp("PERSIST", f"key:{i}") for i in range(start, start + TTL_CHUNK)))
    return batches


def ttl_measure(pipe, data, cpu):
    """One batch: its commands' time inside the server's call() (INFO commandstats); the main
    thread's CPU time over it (parsing and replies too) goes to `cpu`."""
    names = ("expire", "pexpire", "persist")
    usec, ns = pipe.usec(names), pipe.server.cpu_ns()
    pipe.send(data, 3 * TTL_CHUNK)
    ns, usec = pipe.server.cpu_ns() - ns, pipe.usec(names) - usec
    cpu.append(ns)
    return usec


def expire_family(binary, module):
    """(server time inside the commands, main-thread CPU time) of EXPIRE + PEXPIRE + PERSIST on
    TTL_KEYS plain keys: TTL_PAIRS pairs of TTL_CHUNK keys on each of TTL_SERVERS server pairs."""
    batches, inside, cpu = ttl_batches(), Estimate(), Estimate()
    for _ in range(TTL_SERVERS):
        with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
            servers = Server(binary, module, d1), Server(binary, None, d2)
            try:
                for server in servers:
                    server.cli("DEBUG", "POPULATE", TTL_KEYS, "key")
                mod, plain = (Pipe(server) for server in servers)
                cpu_module, cpu_plain = cpu.group()
                turn = iter(range(TTL_PAIRS * 2))
                pick = lambda: batches[next(turn) // 2 % len(batches)]
                alternated(TTL_PAIRS, lambda: ttl_measure(mod, pick(), cpu_module),
                           lambda: ttl_measure(plain, pick(), cpu_plain), inside.group())
            finally:
                for server in servers:
                    server.stop()
    return inside, cpu


def load_seconds(binary, module, directory):
    """Starts a server on the RDB in `directory`; the seconds its log says loading took."""
    log = os.path.join(directory, "server.log")
    if os.path.exists(log):
        os.remove(log)
    Server(binary, module, directory, rdb="dump.rdb").stop()
    with open(log) as text:
        found = re.search(r"DB loaded from disk: ([\d.]+) seconds", text.read())
    if not found:
        raise RuntimeError("no load time in the server's log")
    return float(found.group(1))


def rdb_load(binary, module):
    """LOAD_PAIRS loads of an RDB of LOAD_KEYS plain keys (plus the lock, or its plain twin),
    each by a new server process: a process's hash seed and layout are part of what moves."""
    load = Estimate()
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        make_rdb(binary, module, d1, with_lock=True, keys=LOAD_KEYS)
        make_rdb(binary, module, d2, with_lock=False, keys=LOAD_KEYS)
        for n in range(LOAD_PAIRS):  # each pair of loads is its own two processes
            alternated(1, lambda: load_seconds(binary, module, d1),
                       lambda: load_seconds(binary, None, d2), load.group(), first=n)
    return load


def processed(pipe):
    """The server's count of commands processed (INFO stats)."""
    return int(re.search(rb"total_commands_processed:(\d+)", pipe.info("stats")).group(1))


def throughput(binary, module):
    """Requests per second under `redis-benchmark -P 16 -l`, per test, on BENCH_SERVERS fresh
    server pairs: on each, a benchmark runs against each server, both stopped (SIGSTOP), and each
    in turn is let run for BENCH_WINDOW seconds, BENCH_PAIRS times, the order alternated. Windows
    this short cancel the machine's drift, which whole benchmark runs could not (+-2-5% over 30
    pairs of runs). A server's rate in a window is the commands it processed (its INFO, read
    while its benchmark is stopped) over the window's length."""
    rates = {}
    for test in TESTS:
        rates[test.upper()] = Estimate()
        for _ in range(BENCH_SERVERS):
            with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
                servers = Server(binary, module, d1), Server(binary, None, d2)
                try:
                    windows(servers, test, rates[test.upper()].group())
                finally:
                    for server in servers:
                        server.stop()
    return rates


def windows(servers, test, group):
    pipes = [Pipe(server) for server in servers]
    loads = [subprocess.Popen(pinned(["redis-benchmark", "-p", str(server.port), "-t", test, "-P", "16",
                                      "-l", "-r", "100000", "-q"], 0),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for server in servers]
    try:
        for load in loads:
            load.send_signal(signal.SIGSTOP)
        time.sleep(0.3)  # connected, and stopped
        alternated(BENCH_PAIRS, lambda: window(pipes[0], loads[0]), lambda: window(pipes[1], loads[1]), group)
        if any(load.poll() is not None or not sum(rates) for load, rates in zip(loads, group)):
            raise RuntimeError(f"redis-benchmark -t {test} stopped or served nothing")
    finally:
        for load in loads:
            load.kill()
            load.wait()


def window(pipe, load):
    before, start = processed(pipe), time.perf_counter()
    load.send_signal(signal.SIGCONT)
    time.sleep(BENCH_WINDOW)
    load.send_signal(signal.SIGSTOP)
    length = time.perf_counter() - start
    time.sleep(0.002)  # the replies in flight
    return (processed(pipe) - before - 1) / length  # less the INFO itself


def judged(ratio, resolution, limit, at_most=True):
    """Met when the ratio keeps to the limit; missed only when even its interval does not (a
    cost the run resolved); otherwise the run could not tell, said as such."""
    within = (lambda r: r <= limit) if at_most else (lambda r: r >= limit)
    if within(ratio):
        return "met"
    best = ratio - resolution if at_most else ratio + resolution
    return "not resolved" if within(best) else "**missed**"


def report(binary, module, row):
    """Prints the timed rows through `row(measure, value, goal, verdict)`."""
    inside, cpu = expire_family(binary, module)
    row(f"EXPIRE + PEXPIRE + PERSIST server time (inside the commands), {TTL_KEYS:,} plain keys",
        str(inside), "<= 1.02x", judged(inside.ratio(), inside.resolution(), 1.02))
    row("EXPIRE + PEXPIRE + PERSIST main-thread CPU time (with parsing and replies)",
        str(cpu), "<= 1.02x", judged(cpu.ratio(), cpu.resolution(), 1.02))
    load = rdb_load(binary, module)
    row(f"RDB load time, {LOAD_KEYS:,} plain keys", str(load), "<= 1.02x",
        judged(load.ratio(), load.resolution(), 1.02))
    for test, rate in throughput(binary, module).items():
        row(f"redis-benchmark {test} -P 16, requests/s", str(rate), ">= 0.99x",
            judged(rate.ratio(), rate.resolution(), 0.99, at_most=False))
