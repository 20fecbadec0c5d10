#!/usr/bin/env python3
"""`make bench-elect`: leader election, dlock against etcd, side by side on this machine.

- Failover: the leader is SIGKILLed (at a random point of its lease) while a second candidate
  waits; the time from the kill to the second leader's first action (its command starting, or
  etcd's campaign returning), over TRIALS trials each, for dlock on 1 and on 5 masters and for
  etcd's election (one member, its HTTP gateway, a lease kept alive every TTL/3 as clientv3's
  session does). The same lease, 1 s (etcd takes whole seconds). Goal: p99 <= lease + 50 ms.
- Observers: when an observer (`dlock observe`, etcd's observe stream) hears the new leader,
  relative to the new leader's first action (negative: heard before its command started).
- Pauses: a leader SIGSTOPped past its lease, then resumed, keeps writing for the moment before
  it notices the loss; its writes through the gate (DLOCK.GUARD with its epoch) against writes
  after a check of its own belief (client-go's way): how many are accepted after the next
  leader's first write.

usage: elect.py MODULE DLOCK [TRIALS]   (standard library; etcd and etcdctl from Debian)
"""
import os, random, signal, subprocess, sys, tempfile, threading, time

import elect_etcd
from resp_util import command, start_server

LEASE_S = 1
HERE = os.path.dirname(os.path.abspath(__file__))


def wait_file(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                text = f.read().strip()
            if text:
                return text
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    raise RuntimeError(f"{path} never written")


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


class Dlock:
    def __init__(self, dlock, ports, directory):
        self.dlock, self.dir = dlock, directory
        nodes = ",".join(f"redis://127.0.0.1:{p}" for p in ports)
        self.env = {**os.environ, "DLOCK_NODES": nodes, "DLOCK_TIMEOUT": "200ms"}

    def candidate(self, name, value, out):
        script = f"date +%s%N > {out}.tmp && mv {out}.tmp {out}; exec sleep 3600"
        return subprocess.Popen(
            [self.dlock, "elect", name, "--ttl", f"{LEASE_S}s", "--value", value, "--", "sh", "-c", script],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def observe(self, name, heard):
        process = subprocess.Popen([self.dlock, "observe", name], env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def follow():
            for line in process.stdout:
                parts = line.rstrip("\n").split(" ", 2)
                heard.append((parts[2] if len(parts) == 3 else None, time.time_ns()))

        threading.Thread(target=follow, daemon=True).start()
        return process

    def done(self, process):
        process.send_signal(signal.SIGTERM)  # stops its command, resigns
        process.wait()


class Etcd:
    def __init__(self, endpoint, directory):
        self.endpoint, self.dir = endpoint, directory

    def candidate(self, name, value, out):
        return subprocess.Popen(
            [sys.executable, os.path.join(HERE, "elect_etcd.py"), self.endpoint, name, value, str(LEASE_S), out],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def observe(self, name, heard):
        elect_etcd.observe(self.endpoint, name, heard)
        return None

    def done(self, process):
        process.kill()
        process.wait()


def heard_at(heard, value, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for v, at in list(heard):
            if v == value:
                return at
        time.sleep(0.002)
    return None


def failover(system, trials, label):
    """(failover ms, observer ms) per trial."""
    out = []
    for i in range(trials):
        name, heard = f"{label}-{i}", []
        watcher = system.observe(name, heard)
        a_file, b_file = (os.path.join(system.dir, f"{name}-{who}") for who in "ab")
        a = system.candidate(name, f"a{i}", a_file)
        wait_file(a_file)
        time.sleep(random.uniform(0.0, LEASE_S))  # anywhere in the extension cycle
        b = system.candidate(name, f"b{i}", b_file)
        time.sleep(0.3)  # b campaigns
        killed = time.time_ns()
        a.kill()
        a.wait()
        first_action = int(wait_file(b_file))
        heard = heard_at(heard, f"b{i}")
        out.append(((first_action - killed) / 1e6, None if heard is None else (heard - first_action) / 1e6))
        system.done(b)
        if watcher is not None:
            watcher.kill()
            watcher.wait()
    return out


def paused(dlock, port, mode, trials, directory):
    """Writes of a paused-then-resumed leader accepted after the next leader's first write."""
    accepted = 0
    for i in range(trials):
        name = f"pause-{mode}-{i}"
        logs = [os.path.join(directory, f"{name}-{w}.log") for w in "ab"]
        pids = [os.path.join(directory, f"{name}-{w}.pid") for w in "ab"]
        writer = [sys.executable, os.path.join(HERE, "elect_writer.py"), mode, str(port)]
        env = {**os.environ, "DLOCK_NODES": f"redis://127.0.0.1:{port}", "DLOCK_TIMEOUT": "200ms"}
        start = lambda w: subprocess.Popen(  # noqa: E731
            [dlock, "elect", name, "--ttl", f"{LEASE_S}s", "--", *writer, logs[w], pids[w]],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        a = start(0)
        a_writer = int(wait_file(pids[0]))
        time.sleep(0.2)
        os.kill(a.pid, signal.SIGSTOP)  # the whole leader freezes: its dlock and its work
        os.kill(a_writer, signal.SIGSTOP)
        b = start(1)
        wait_file(logs[1])
        time.sleep(0.1)
        os.kill(a_writer, signal.SIGCONT)  # the work resumes first, past its check
        time.sleep(0.05)
        os.kill(a.pid, signal.SIGCONT)
        time.sleep(0.5)
        for process in (a, b):
            process.send_signal(signal.SIGTERM)
            process.wait()
        # B's first write was made by the time it was answered; A's writes sent after that.
        b_first = min(int(line.split()[1]) for line in open(logs[1]) if line.endswith("ok\n"))
        accepted += sum(1 for line in open(logs[0]) if line.endswith("ok\n") and int(line.split()[0]) > b_first)
    return accepted


def row(label, results):
    failovers = [f for f, _ in results]
    observed = [o for _, o in results if o is not None]
    goal = "met" if percentile(failovers, 0.99) <= LEASE_S * 1000 + 50 else "MISSED"
    obs = f"{percentile(observed, 0.5):7.1f} {percentile(observed, 0.99):7.1f}" if observed else "      -       -"
    print(f"| {label:<22} | {len(results):>6} | {percentile(failovers, 0.5):8.1f} | {percentile(failovers, 0.99):8.1f} "
          f"| {goal:<6} | {obs.split()[0]:>8} | {obs.split()[1]:>8} | {len(observed):>5} |")


def main():
    module, dlock = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    with tempfile.TemporaryDirectory() as d:
        servers = [start_server(module, d) for _ in range(5)]
        etcd, endpoint = elect_etcd.start(d)
        try:
            ports = [port for _, _, port in servers]
            results = {}
            for label, system in [("dlock, 1 master", Dlock(dlock, ports[:1], d)),
                                  ("etcd election", Etcd(endpoint, d)),
                                  ("dlock, 5 masters", Dlock(dlock, ports, d))]:
                results[label] = failover(system, trials, label.replace(" ", "").replace(",", ""))
            print(f"leader SIGKILLed -> the next leader's first action, lease {LEASE_S * 1000} ms, ms:")
            print("| system                 | trials | p50      | p99      | goal   | obs p50  | obs p99  | heard |")
            print("|---|---|---|---|---|---|---|---|")
            for label, result in results.items():
                row(label, result)
            pauses = max(3, trials // 3)
            for mode in ("gate", "check"):
                n = paused(dlock, ports[0], mode, pauses, d)
                print(f"paused leader resumed, {pauses} trials, writes {'through the gate' if mode == 'gate' else 'after a check of its belief'}: "
                      f"{n} accepted after the next leader wrote")
        finally:
            for server, _, _ in servers:
                server.kill()
            etcd.kill()


if __name__ == "__main__":
    main()
