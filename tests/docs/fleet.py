"""The servers the docs' examples run against, on free ports: what `make run` (one master on
6379), `make cluster` (five masters on 7001-7005) and `make redis-cluster` (a Redis Cluster on
7101-7106) start, and three TLS masters for the pages' 10.0.0.x:6380. An example's text names the
documented addresses; they are replaced by the real ones before it runs, and back in what it
printed. Servers an example stopped are started again, and every server is emptied (FLUSHALL),
before the next example."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from examples import ROOT

MODULE = os.environ.get("DLOCK_MODULE", str(ROOT / "target/release/libdlock.so"))
REDIS_SERVER = os.environ.get("DLOCK_REDIS_SERVER", "redis-server")
REDIS_CLI = shutil.which("redis-cli") or "redis-cli"
#: The ACL user and password of the TLS masters (the password in a file, never in argv).
TLS_USER, TLS_PASSWORD = "locker", "locker-pa55-7c1e"


def free_port(below: int = 65536) -> int:
    """A free port under `below` (a cluster node's bus port is its port + 10000)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port < below:
            return port


class Node:
    """One redis-server with the module."""

    def __init__(self, args: tuple[str, ...] = (), conf: tuple[str, ...] = (), tls: bool = False) -> None:
        self.port = free_port(55536 if "--cluster-enabled" in args else 65536)
        self.dir = Path(tempfile.mkdtemp(prefix="dlock-docs-"))
        self.args, self.conf, self.tls = args, conf, tls
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        (self.dir / "redis.conf").write_text("".join(f"{line}\n" for line in self.conf))
        listen = ["--port", "0", "--tls-port", str(self.port)] if self.tls else ["--port", str(self.port)]
        argv = [REDIS_SERVER, str(self.dir / "redis.conf"), *listen, "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", str(self.dir), "--logfile", "redis.log", *self.args]
        self.process = subprocess.Popen([*argv, "--loadmodule", MODULE], stdout=subprocess.DEVNULL)

    def cli(self, *args: str) -> str:
        """redis-cli against this node (as the ACL user over TLS); its output."""
        tls: list[str] = []
        if self.tls:
            files = self.dir / "pki"
            tls = ["--tls", "--cacert", str(files / "ca.crt"), "--cert", str(files / "client.crt")]
            tls += ["--key", str(files / "client.key"), "--user", TLS_USER, "--pass", TLS_PASSWORD]
        done = subprocess.run([REDIS_CLI, "-p", str(self.port), *tls, *args], capture_output=True, text=True)
        return done.stdout.strip()

    def up(self) -> bool:
        return self.process is not None and self.process.poll() is None and self.cli("PING").endswith("PONG")

    def ready(self, within: float = 10.0) -> None:
        deadline = time.monotonic() + within
        while not self.up():
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {self.port} did not start: see {self.dir}/redis.log")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Fleet:
    """A set of nodes and the documented addresses they stand for."""

    def __init__(
        self, nodes: list[Node], documented: list[str], cluster: bool = False, pki: Path | None = None
    ) -> None:
        self.nodes, self.documented, self.cluster = nodes, documented, cluster
        #: The TLS fleet's certificates (ca.crt, client.crt, client.key), else None.
        self.pki = pki

    def start(self) -> Fleet:
        """Every node started and answering (a cluster formed); on failure none left running."""
        try:
            for node in self.nodes:
                node.start()
            for node in self.nodes:
                node.ready()
            if self.cluster:
                self.create_cluster()
        except BaseException:
            self.stop()
            raise
        return self

    def create_cluster(self) -> None:
        addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *addresses, "--cluster-replicas", "1", "--cluster-yes"],
            check=True,
            capture_output=True,
        )
        deadline = time.monotonic() + 30
        while not all("cluster_state:ok" in n.cli("CLUSTER", "INFO") for n in self.nodes):
            if time.monotonic() > deadline:
                raise RuntimeError("the docs' Redis Cluster did not settle")
            time.sleep(0.1)
        # Every replica in sync, so that the first grant is acknowledged (replica_ack auto).
        while not all(
            "master_link_status:up" in info or "role:master" in info
            for info in (n.cli("INFO", "replication") for n in self.nodes)
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the docs' Redis Cluster's replicas did not sync")
            time.sleep(0.1)
        # Every replica has acknowledged an offset to its master. A replica of a cluster just
        # created can be online for seconds before its first acknowledgement (seen with 1 fleet
        # in 3), and until then a grant's WAIT 1 100 counts no replica and fails the example.
        while not all(re.search(r"slave0:[^\n]*offset=[1-9]", info) for info in self.masters_info()):
            if time.monotonic() > deadline:
                raise RuntimeError("the docs' Redis Cluster's replicas never acknowledged")
            time.sleep(0.1)

    def masters_info(self) -> list[str]:
        infos = (n.cli("INFO", "replication") for n in self.nodes)
        return [info for info in infos if "role:master" in info]

    def ready_for_an_example(self) -> None:
        """Nodes an example stopped are started again (a cluster's cannot be); all emptied."""
        for node in self.nodes:
            if not node.up():
                if self.cluster:
                    raise RuntimeError("an example stopped a node of the docs' Redis Cluster")
                node.stop()
                node.dir.mkdir(parents=True, exist_ok=True)
                node.start()
                node.ready()
        for node in self.nodes:
            if not self.cluster or "role:master" in node.cli("INFO", "replication"):
                node.cli("FLUSHALL")

    @property
    def actual(self) -> list[str]:
        """What each documented address stands for: a port for a port, an address for one."""
        return [
            f"127.0.0.1:{n.port}" if ":" in d else str(n.port) for d, n in zip(self.documented, self.nodes, strict=True)
        ]

    def into(self, text: str) -> str:
        """`text` with the documented addresses replaced by the real ones."""
        for documented, actual in zip(self.documented, self.actual, strict=True):
            text = re.sub(rf"(?<![\w.]){re.escape(documented)}(?![\w])", actual, text)
        return text

    def back(self, text: str) -> str:
        """What an example printed, with the real addresses said as documented."""
        for documented, actual in zip(self.documented, self.actual, strict=True):
            text = re.sub(rf"(?<![\w.]){re.escape(actual)}(?![\w])", documented, text)
        return text

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def make_pki(into: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=into, check=True, capture_output=True)

    into.mkdir(parents=True, exist_ok=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=dlock docs CA")
    (into / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    (into / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=dlock docs {name}")
        signed = ["-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1", "-out", f"{name}.crt"]
        extensions = ["-extfile", f"{name}.ext"]  # v3 certificates: rustls refuses v1
        openssl("x509", "-req", "-in", f"{name}.csr", *signed, *extensions)


def tls_fleet() -> Fleet:
    """Three TLS-only masters asking for client certificates, with only the ACL user locker."""
    pki = Path(tempfile.mkdtemp(prefix="dlock-docs-pki-"))
    make_pki(pki)
    tls = ["--tls-cert-file", str(pki / "server.crt"), "--tls-key-file", str(pki / "server.key")]
    tls += ["--tls-ca-cert-file", str(pki / "ca.crt"), "--tls-auth-clients", "yes"]
    acl = ("user default off", f"user {TLS_USER} on >{TLS_PASSWORD} ~* &* +@all")
    nodes = [Node(tuple(tls), acl, tls=True) for _ in range(3)]
    for node in nodes:
        shutil.copytree(pki, node.dir / "pki")
    return Fleet(nodes, ["10.0.0.1:6380", "10.0.0.2:6380", "10.0.0.3:6380"], pki=pki).start()


FIXTURES = {
    "one": lambda: Fleet([Node()], ["6379"]).start(),
    "five": lambda: Fleet([Node() for _ in range(5)], [str(p) for p in range(7001, 7006)]).start(),
    "cluster": lambda: Fleet(
        [Node(("--cluster-enabled", "yes", "--cluster-node-timeout", "2000")) for _ in range(6)],
        [str(p) for p in range(7101, 7107)],
        cluster=True,
    ).start(),
    "tls": tls_fleet,
}


def fixture_for(text: str, named: str | None) -> str:
    """The fixture an example names, else the one whose documented addresses it uses."""
    if named:
        return named
    if re.search(r"\b71(0[1-6])\b", text):
        return "cluster"
    if re.search(r"\b700[1-5]\b", text):
        return "five"
    if "10.0.0." in text and ":6380" in text:
        return "tls"
    return "one"


def stop_group(process: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """Stops a process started in a session of its own, and everything it started there."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
