"""monitoring/dlock.lua through the real redis_exporter: a workload with a known outcome, then
one scrape of /metrics, each dlock_* value asserted; and every metric the Grafana dashboard
queries is one the scrape produced."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from cluster import Server, free_port

MONITORING = Path(__file__).resolve().parents[1]
EXPORTER = "prometheus-redis-exporter"  # Debian's name for redis_exporter

# What the workload below does, as the exporter must show it.
EXPECTED = {
    "dlock_grants_total": 6,  # a, a (the handoff: counted in both), b, c, e, f
    "dlock_contended_total": 1,
    "dlock_releases_total": 2,
    "dlock_force_releases_total": 1,
    "dlock_extends_total": 1,
    "dlock_fences_total": 1,
    "dlock_expired_before_release_total": 1,
    "dlock_eviction_refusals_total": 1,
    "dlock_waiters": 1,
    "dlock_handoffs_total": 1,
    "dlock_wait_timeouts_total": 1,
    "dlock_revocations_total": 0,
    "dlock_locks_held": 2,
    "dlock_refused_values_total": 0,
    "dlock_gates_revived_total": 0,
    "dlock_eviction_guard_safe": 1,
    "dlock_eviction_guard_refusing": 0,
    "dlock_eviction_guard_allowed": 0,
    "dlock_up": 1,
}


@pytest.fixture
def exporter(one: Server) -> Iterator[str]:
    """The exporter on a free port, scraping `one` with the collect script; its /metrics URL."""
    if shutil.which(EXPORTER) is None:
        pytest.fail(f"{EXPORTER} is missing: make monitoring-test installs it (apt prometheus-redis-exporter)")
    port = free_port()
    args = [EXPORTER, "-redis.addr", one.url, "-script", str(MONITORING / "dlock.lua")]
    process = subprocess.Popen(
        [*args, "-web.listen-address", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 10
        while not answers(url):
            assert process.poll() is None, f"the exporter exited: {process.stderr and process.stderr.read()!r}"
            assert time.monotonic() < deadline, "the exporter did not listen within 10 s"
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1):
            return True
    except OSError:
        return False


def scrape(url: str) -> dict[str, float]:
    """The dlock values of one scrape: key label -> value."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()
    values = {}
    for line in text.splitlines():
        found = re.fullmatch(r'redis_script_values\{key="(dlock_\w+)"\} (\S+)', line)
        if found:
            values[found.group(1)] = float(found.group(2))
    return values


def workload(node: redis.Redis) -> Waiter:
    """Grants, contention, a handoff through a WAIT queue, a wait timeout, a lease that expires
    before release, extend / fence / force-release, one eviction refusal; leaves one client
    waiting on `a` (returned: join it after the scrape)."""
    assert node.execute_command("DLOCK.ACQUIRE", "a", "o1", 60000)
    assert node.execute_command("DLOCK.ACQUIRE", "a", "o2", 60000) is None  # contended
    handed = Waiter(node, "a", "o3", 5000)
    assert node.execute_command("DLOCK.RELEASE", "a", "o1") == 1  # -> handoff to o3
    assert handed.join_value() is not None
    assert node.execute_command("DLOCK.ACQUIRE", "b", "o1", 60000)
    assert node.execute_command("DLOCK.ACQUIRE", "b", "o2", 60000, "WAIT", 50) is None  # timeout
    token = node.execute_command("DLOCK.ACQUIRE", "c", "o1", 30)
    time.sleep(0.1)
    assert node.execute_command("DLOCK.STATUS", "c") is None
    assert node.execute_command("DLOCK.EXTEND", "b", "o1", 60000) == 1
    assert node.execute_command("DLOCK.ACQUIRE", "e", "o1", 60000)
    assert node.execute_command("DLOCK.FENCE", "e", "o1", token + 10**6) == 1
    assert node.execute_command("DLOCK.FORCERELEASE", "e") == 1
    assert node.execute_command("DLOCK.RELEASE", "a", "o3") == 1
    node.config_set("maxmemory", "1gb")
    node.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(redis.ResponseError):
        node.execute_command("DLOCK.ACQUIRE", "g", "o1", 60000)
    node.config_set("maxmemory-policy", "noeviction")
    assert node.execute_command("DLOCK.ACQUIRE", "f", "o1", 60000)
    queued = Waiter(node, "f", "o2", 30000)  # still waiting at the scrape
    wait_until(lambda: node.execute_command("DLOCK.WAITERS", "f") != [])
    return queued


class Waiter(threading.Thread):
    """ACQUIRE ... WAIT on a connection of its own, in the background."""

    def __init__(self, node: redis.Redis, key: str, owner: str, timeout_ms: int) -> None:
        super().__init__(daemon=True)
        self.args_ = (key, owner, 60000, "WAIT", timeout_ms)
        self.client = redis.Redis(port=node.connection_pool.connection_kwargs["port"])
        self.value: object = None
        self.start()
        wait_until(lambda: node.execute_command("DLOCK.WAITERS", key) != [])

    def run(self) -> None:
        self.value = self.client.execute_command("DLOCK.ACQUIRE", *self.args_)

    def join_value(self) -> object:
        self.join(timeout=10)
        return self.value


def wait_until(condition: Callable[[], object], within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_every_info_field_is_a_metric_with_the_workload_s_value(one: Server, exporter: str) -> None:
    node = one.client()
    queued = workload(node)
    values = scrape(exporter)
    assert {k: values.get(k) for k in EXPECTED} == {k: float(v) for k, v in EXPECTED.items()}
    counter = int(node.execute_command("DLOCK.COUNTER"))
    assert values["dlock_fencing_counter"] == float(counter)
    assert values["dlock_quarantine_left_seconds"] == 0
    # Every INFO field became a metric, and nothing else did.
    assert set(values) == {name for field in node.info("dlock") for name in metric_names(field)} | {"dlock_up"}
    node.execute_command("DLOCK.RELEASE", "f", "o1")
    assert queued.join_value() is not None


def metric_names(field: str) -> list[str]:
    """The metrics dlock.lua makes of one INFO dlock field (docs/monitoring.md)."""
    if field == "dlock_quarantine_left_ms":
        return ["dlock_quarantine_left_seconds"]
    if field == "dlock_eviction_guard":
        return [f"{field}_{state}" for state in ("safe", "refusing", "allowed")]
    return [f"{field}_total" if f"{field}_total" in EXPECTED else field]


def test_quarantine_and_a_refusing_guard_show(one: Server, exporter: str) -> None:
    node = one.client()
    node.config_set("dlock.quarantine-ms", 3_600_000)  # counted from the module's load
    node.config_set("maxmemory", "1gb")
    node.config_set("maxmemory-policy", "allkeys-lru")
    values = scrape(exporter)
    assert 3000 < values["dlock_quarantine_left_seconds"] <= 3600
    assert (values["dlock_eviction_guard_refusing"], values["dlock_eviction_guard_safe"]) == (1, 0)


def test_a_node_without_the_module_says_so(exporter: str, one: Server) -> None:
    bare = subprocess.run(
        ["redis-cli", "-p", str(one.port), "EVAL", (MONITORING / "dlock.lua").read_text(), "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "dlock_up" in bare.stdout
    plain = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(plain), "--save", "", "--appendonly", "no"])
    try:
        wait_until(lambda: answers_ping(plain))
        reply = redis.Redis(port=plain).eval((MONITORING / "dlock.lua").read_text(), 0)
        assert reply == [b"dlock_up", b"0"]
    finally:
        server.terminate()
        server.wait(timeout=10)


def answers_ping(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.RedisError:
        return False


def test_every_dashboard_query_names_a_scraped_metric(one: Server, exporter: str) -> None:
    scraped = set(scrape(exporter)) | {"redis_script_values"}
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert exprs
    for expr in exprs:
        keys = re.findall(r'key="([^"]+)"', expr)
        assert keys, f"{expr!r} names no dlock value"
        assert set(keys) <= scraped, f"{expr!r}: {set(keys) - scraped} never scraped"
        names = set(re.findall(r"\b([a-z_]+)\{", expr)) - {"rate", "increase"}
        assert names <= scraped, f"{expr!r}: {names - scraped}"


def test_alert_rules_pass_promtool() -> None:
    for args in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]):
        run = subprocess.run(["promtool", *args], cwd=MONITORING, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr


def test_alert_rules_name_only_scraped_metrics(one: Server, exporter: str) -> None:
    scraped = set(scrape(exporter))
    rules = (MONITORING / "alerts.yml").read_text()
    keys = set(re.findall(r'key="([^"]+)"', rules))
    assert keys and keys <= scraped, keys - scraped
