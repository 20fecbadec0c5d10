"""Production-like servers for the connectivity tests: a PKI made at test time with the openssl
CLI (a CA, a server certificate for 127.0.0.1, client certificates), redis-servers speaking only
TLS and asking for client certificates, and ACL users instead of the default user. Passwords go
to config files, never to argv. Nothing is mocked: openssl missing fails the tests."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import redis
from cluster import Server

#: The ACL user the tests connect as, and a password no message may show.
USER = "app"
PASSWORD = "pw-7f3a9-s3cret"
#: The default user is off: a client without credentials is refused (NOAUTH).
ACL = ("user default off", f"user {USER} on >{PASSWORD} ~* &* +@all")


@dataclass(frozen=True)
class Pki:
    dir: Path

    def __getitem__(self, name: str) -> str:
        """`pki["ca.crt"]`: the path of a file it made."""
        path = self.dir / name
        if not path.exists():
            raise KeyError(name)
        return str(path)


def openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise RuntimeError("the openssl CLI is required by the TLS tests (apt-get install openssl)")
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed:\n{done.stderr}")


#: The pass phrase of client.enc.key (the client key, encrypted).
KEY_PASS_PHRASE = "key-pass-0b7e2"


def make_pki() -> Pki:
    """ca (trusted by the servers), other_ca (trusted by nobody), server (127.0.0.1 as an IP
    SAN, signed by ca), client (signed by ca; its key also encrypted as client.enc.key),
    stranger (a client certificate signed by other_ca); EC P-256 keys, valid one day; plus
    garbage.pem, which is no PEM at all."""
    dir = Path(tempfile.mkdtemp(prefix="dlock-pki-"))
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "other_ca"):
        made = ["-keyout", f"{ca}.key", "-out", f"{ca}.crt", "-days", "1", "-subj", f"/CN=dlock test {ca}"]
        openssl("req", "-x509", *key, *made, cwd=dir)
    (dir / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, ca in (("server", "ca"), ("client", "ca"), ("stranger", "other_ca")):
        subject = f"/CN=dlock test {name}"
        openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=dir)
        signed_by = ["-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial", "-days", "1"]
        extensions = ["-extfile", "server.ext"] if name == "server" else []
        openssl("x509", "-req", "-in", f"{name}.csr", *signed_by, "-out", f"{name}.crt", *extensions, cwd=dir)
    (dir / "pass").write_text(KEY_PASS_PHRASE)  # read by openssl from a file: not in argv
    openssl("pkey", "-in", "client.key", "-aes256", "-passout", "file:pass", "-out", "client.enc.key", cwd=dir)
    (dir / "garbage.pem").write_text("not a certificate\n")
    return Pki(dir)


class TLSServer(Server):
    """A redis-server with the module that speaks only TLS (`--port 0`), asks every client for a
    certificate signed by the test CA, and knows only the ACL user (ACL above)."""

    def __init__(self, pki: Pki, config: tuple[str, ...] = (), conf_lines: tuple[str, ...] = ()) -> None:
        tls = (
            "--tls-cert-file", pki["server.crt"], "--tls-key-file", pki["server.key"],
            "--tls-ca-cert-file", pki["ca.crt"], "--tls-auth-clients", "yes", "--tls-replication", "yes",
        )  # fmt: skip
        super().__init__((), (*tls, *config), (*ACL, *conf_lines))
        self.pki = pki

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.port}"

    def listen(self) -> list[str]:
        return ["--port", "0", "--tls-port", str(self.port)]

    def client(self, timeout: float = 5.0) -> redis.Redis:
        tls = redis_py_tls(self.pki)
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout, protocol=2, **tls)  # type: ignore[arg-type]


def redis_py_tls(pki: Pki, username: str | None = USER, password: str = PASSWORD) -> dict[str, str | bool | None]:
    """redis-py's own arguments for the test servers (its own TLS, not dlock's)."""
    tls = {"ssl_ca_certs": pki["ca.crt"], "ssl_certfile": pki["client.crt"], "ssl_keyfile": pki["client.key"]}
    return {"ssl": True, **tls, "username": username, "password": password}


def tls_keywords(pki: Pki, **overrides: object) -> dict[str, object]:
    """The LockManager keywords for the test servers: the CA, the client certificate, the user."""
    keywords: dict[str, object] = {
        "ssl_ca_certs": pki["ca.crt"],
        "ssl_certfile": pki["client.crt"],
        "ssl_keyfile": pki["client.key"],
        "username": USER,
        "password": PASSWORD,
        "timeout": 0.5,
    }
    return {**keywords, **overrides}


class ACLServer(Server):
    """A plain (TCP) redis-server with the module and only the ACL user; `unix` also listens
    on a Unix socket in its directory."""

    def __init__(self, unix: bool = False, config: tuple[str, ...] = (), conf_lines: tuple[str, ...] = ()) -> None:
        super().__init__((), config, (*ACL, *conf_lines))
        self.unix = unix

    @property
    def socket(self) -> str:
        return f"{self.dir}/redis.sock"

    def listen(self) -> list[str]:
        unix = ["--unixsocket", self.socket, "--unixsocketperm", "700"] if self.unix else []
        return [*super().listen(), *unix]

    def client(self, timeout: float = 5.0) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=timeout, protocol=2, username=USER, password=PASSWORD)
