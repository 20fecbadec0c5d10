"""A Redis Sentinel deployment for the tests: a master and a replica (both with the module and
only the ACL user), watched by three sentinels that ask for a password of their own. Short
`down-after-milliseconds` and `failover-timeout`, so a failover takes a few seconds."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import redis
from cluster import free_port, launch, server_binary
from conftest import eventually
from secure import PASSWORD, USER, ACLServer, Pki, TLSServer, redis_py_tls

MASTER_NAME = "locks"
SENTINEL_PASSWORD = "sentinel-pw-91c0e"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000
#: Replication as the ACL user: the replica authenticates to the master (and the master, once
#: demoted, to the new one).
REPLICATION = ("--repl-diskless-sync-delay", "0")
REPLICATION_AUTH = (f"masteruser {USER}", f"masterauth {PASSWORD}")


class SentinelProcess:
    """One `redis-server sentinel.conf --sentinel` (its config in a temp dir: it rewrites it)."""

    def __init__(self, master_port: int, pki: Pki | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="dlock-sentinel-")
        self.port = free_port()
        self.pki = pki
        conf = Path(self.dir) / "sentinel.conf"
        conf.write_text(
            "\n".join(
                [
                    *(tls_only(self.port, pki) if pki is not None else [f"port {self.port}"]),
                    "bind 127.0.0.1",
                    f"dir {self.dir}",
                    "logfile sentinel.log",
                    f"requirepass {SENTINEL_PASSWORD}",
                    f"sentinel sentinel-pass {SENTINEL_PASSWORD}",
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2",
                    f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}",
                    f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
                    f"sentinel auth-user {MASTER_NAME} {USER}",
                    f"sentinel auth-pass {MASTER_NAME} {PASSWORD}",
                    "",
                ]
            )
        )
        conf.chmod(0o600)
        self.process = subprocess.Popen(
            [server_binary(), str(conf), "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def client(self) -> redis.Redis:
        tls = redis_py_tls(self.pki, username=None, password=SENTINEL_PASSWORD) if self.pki else {}
        where = {"host": "127.0.0.1", "port": self.port, "socket_timeout": 2, "protocol": 2}
        return redis.Redis(**where, **{"password": SENTINEL_PASSWORD, **tls})  # type: ignore[arg-type]

    def master(self) -> tuple[str, int] | None:
        try:
            reply = self.client().execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
        except redis.RedisError:
            return None
        return (reply[0].decode(), int(reply[1])) if reply else None

    def knows(self, replicas: int, sentinels: int) -> bool:
        """Whether it sees the master up, `replicas` replicas up and `sentinels` other sentinels."""
        try:
            master = self.client().execute_command("SENTINEL", "MASTER", MASTER_NAME)
            seen = self.client().execute_command("SENTINEL", "REPLICAS", MASTER_NAME)
            others = self.client().execute_command("SENTINEL", "SENTINELS", MASTER_NAME)
        except redis.RedisError:
            return False
        state = dict(zip(master[::2], master[1::2], strict=True))
        seen = [dict(zip(r[::2], r[1::2], strict=True)) for r in seen]
        # A replica the sentinel can promote: linked to it, heard from, its link to the master up.
        ready = [r for r in seen if r[b"flags"] == b"slave" and r[b"master-link-status"] == b"ok"]
        return state[b"flags"] == b"master" and len(ready) >= replicas and len(others) >= sentinels

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def tls_only(port: int, pki: Pki) -> list[str]:
    """A sentinel speaking TLS only, to clients and to the servers it watches (tls-replication),
    with the server certificate as its client certificate."""
    files = [f"tls-cert-file {pki['server.crt']}", f"tls-key-file {pki['server.key']}"]
    return ["port 0", f"tls-port {port}", *files, f"tls-ca-cert-file {pki['ca.crt']}", "tls-replication yes"]


class SentinelDeployment:
    """`pki`: TLS everywhere (data nodes, replication, sentinels), client certificates asked."""

    def __init__(self, pki: Pki | None = None) -> None:
        self.pki = pki
        if pki is None:
            self.master: ACLServer | TLSServer = ACLServer(config=REPLICATION, conf_lines=REPLICATION_AUTH)
            self.replica: ACLServer | TLSServer = ACLServer(config=REPLICATION, conf_lines=REPLICATION_AUTH)
        else:
            self.master = TLSServer(pki, config=REPLICATION, conf_lines=REPLICATION_AUTH)
            self.replica = TLSServer(pki, config=REPLICATION, conf_lines=REPLICATION_AUTH)
        self.sentinels: list[SentinelProcess] = []

    def start(self) -> SentinelDeployment:
        try:
            launch([self.master, self.replica])
            self.replica.client().execute_command("REPLICAOF", "127.0.0.1", self.master.port)
            eventually(self.replica_linked, what="replica link")
            # Started after the link is up, the sentinels see the replica in their first INFO.
            self.sentinels = [SentinelProcess(self.master.port, self.pki) for _ in range(3)]
            eventually(lambda: all(s.knows(replicas=1, sentinels=0) for s in self.sentinels), what="sentinels ready")
        except BaseException:
            self.stop()  # nothing left running behind a failed start
            raise
        return self

    def replica_linked(self) -> bool:
        return self.replica.client().info("replication").get("master_link_status") == "up"

    def url(self, scheme: str = "redis+sentinel") -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"{scheme}://{hosts}/{MASTER_NAME}"

    def wait_for_each_other(self) -> None:
        """Until every sentinel knows the two others (hello messages, every 2 s): needed to agree
        that a master is down and to elect who fails it over."""
        eventually(lambda: all(s.knows(replicas=1, sentinels=2) for s in self.sentinels), 10, "sentinels meet")

    def wait_for_master(self, port: int, within: float = 15.0) -> None:
        """Until every sentinel names the server on `port` as the master."""
        eventually(lambda: all(s.master() == ("127.0.0.1", port) for s in self.sentinels), within, "new master")

    def stop(self) -> None:
        for process in self.sentinels:
            process.stop()
        for server in (self.master, self.replica):
            server.stop()
