"""TLS and credentials for every node (client/src/connect.rs), from the LockManager's keywords
(redis-py's names and meaning): checked, and the TLS context built, before any node is asked. One
context serves every TLS connection of the manager (redis-py builds one per connection, reading
the files each time: 20 ms with the system roots, more than the default per-node timeout).

Secrets (passwords, the key's pass phrase) never appear in a repr or a message."""

from __future__ import annotations

import os
import re
import ssl
from dataclasses import dataclass, field

#: redis-py's spellings of ssl_cert_reqs.
CERT_REQS = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class Login:
    """A user name and password for AUTH (None, None: none sent)."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __bool__(self) -> bool:
        return self.username is not None or self.password is not None

    def kwargs(self) -> dict[str, str]:
        """As redis-py's connection arguments."""
        given = {"username": self.username, "password": self.password}
        return {name: value for name, value in given.items() if value is not None}


@dataclass(frozen=True)
class Security:
    """What the manager's keywords say about reaching the nodes: the TLS context for rediss://
    nodes (None: no TLS keyword given and no TLS node), the login for nodes whose URL has no
    credentials of its own, and the sentinels' login."""

    tls: ssl.SSLContext | None = None
    login: Login = Login()
    sentinel_login: Login = Login()


def login(username: object, password: object, what: str = "") -> Login:
    for name, value in ((f"{what}username", username), (f"{what}password", password)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    if username is not None and password is None:
        raise ValueError(f"{what}username needs {what}password (ACL users authenticate with both)")
    return Login(username, password)  # type: ignore[arg-type]  # both checked above


def verify_mode(cert_reqs: object) -> ssl.VerifyMode:
    """ssl_cert_reqs as redis-py takes it: "required" (default), "optional", "none", None (none)
    or an ssl.VerifyMode."""
    if cert_reqs is None:
        return ssl.CERT_NONE
    if isinstance(cert_reqs, ssl.VerifyMode):
        return cert_reqs
    if isinstance(cert_reqs, str) and cert_reqs in CERT_REQS:
        return CERT_REQS[cert_reqs]
    raise ValueError(f"ssl_cert_reqs must be 'required', 'optional', 'none' or an ssl.VerifyMode, got {cert_reqs!r}")


def path(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path, got {type(value).__name__}")
    return str(os.fspath(value))


def contents(file: str, name: str) -> bytes:
    """The file, read now, so that an unreadable one is named at once."""
    try:
        with open(file, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{name} {file!r} cannot be read: {e.strerror or e}") from None


def tls_context(
    ca_certs: object = None,
    certfile: object = None,
    keyfile: object = None,
    cert_reqs: object = "required",
    check_hostname: object = True,
    key_password: object = None,
) -> ssl.SSLContext:
    """One context for every TLS connection: trusts `ca_certs` (a PEM bundle) instead of the
    system's roots when given; presents `certfile` (with `keyfile`, or a file holding both) when
    given; checks host names unless certificates are not checked at all. ValueError naming the
    file for anything unreadable, malformed or mismatched."""
    mode = verify_mode(cert_reqs)
    if not isinstance(check_hostname, bool):
        raise TypeError(f"ssl_check_hostname must be True or False, got {check_hostname!r}")
    if key_password is not None and not isinstance(key_password, (str, bytes)):
        raise TypeError(f"ssl_password must be a str or None, got {type(key_password).__name__}")
    ca, cert, key = path(ca_certs, "ssl_ca_certs"), path(certfile, "ssl_certfile"), path(keyfile, "ssl_keyfile")
    if key is not None and cert is None:
        raise ValueError(f"ssl_keyfile {key!r} is given without ssl_certfile (the client certificate it belongs to)")
    context = trusting(ca) if ca is not None else ssl.create_default_context()  # the system's roots
    context.check_hostname = check_hostname and mode != ssl.CERT_NONE  # as redis-py: no names without checks
    context.verify_mode = mode
    if cert is not None:
        present(context, cert, key, key_password)
    return context


def trusting(ca: str) -> ssl.SSLContext:
    if b"-----BEGIN CERTIFICATE-----" not in contents(ca, "ssl_ca_certs"):
        raise ValueError(f"ssl_ca_certs {ca!r} holds no PEM certificate")
    try:
        return ssl.create_default_context(cafile=ca)
    except ssl.SSLError as e:
        raise ValueError(f"ssl_ca_certs {ca!r} is not a valid PEM CA bundle ({e.reason or e})") from None


def present(context: ssl.SSLContext, cert: str, key: str | None, key_password: str | bytes | None) -> None:
    """Loads the client certificate and its key into `context`, saying what is wrong with them."""
    if b"-----BEGIN CERTIFICATE-----" not in contents(cert, "ssl_certfile"):
        raise ValueError(f"ssl_certfile {cert!r} holds no PEM certificate")
    if key is None and b"PRIVATE KEY-----" not in contents(cert, "ssl_certfile"):
        raise ValueError(f"ssl_certfile {cert!r} holds no private key, and no ssl_keyfile is given")
    if key is not None and b"PRIVATE KEY-----" not in contents(key, "ssl_keyfile"):
        raise ValueError(f"ssl_keyfile {key!r} holds no PEM private key")
    keyname = f"ssl_keyfile {key!r}" if key is not None else f"the key in ssl_certfile {cert!r}"

    def no_pass_phrase() -> bytes:  # never OpenSSL's prompt on the terminal
        raise ValueError(f"{keyname} is encrypted: give its pass phrase as ssl_password")

    try:
        context.load_cert_chain(cert, key, password=key_password if key_password is not None else no_pass_phrase)
    except ssl.SSLError as e:
        if e.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"{keyname} does not belong to the certificate in ssl_certfile {cert!r}") from None
        if key_password is not None and b"ENCRYPTED" in contents(key or cert, "ssl_keyfile"):
            raise ValueError(f"{keyname}: ssl_password does not decrypt it") from None
        raise ValueError(f"ssl_certfile {cert!r} / {keyname} cannot be loaded ({e.reason or e})") from None


def security(
    tls_needed: bool,
    *,
    ssl_ca_certs: object = None,
    ssl_certfile: object = None,
    ssl_keyfile: object = None,
    ssl_cert_reqs: object = "required",
    ssl_check_hostname: object = True,
    ssl_password: object = None,
    username: object = None,
    password: object = None,
    sentinel_username: object = None,
    sentinel_password: object = None,
) -> Security:
    """The manager's keywords, checked. The TLS context is built when a node uses TLS or any TLS
    keyword is given (so a bad file is named even while every URL still says redis://)."""
    tls_given = any(v is not None for v in (ssl_ca_certs, ssl_certfile, ssl_keyfile, ssl_password))
    tls_given = tls_given or ssl_cert_reqs != "required" or ssl_check_hostname is not True
    tls = None
    if tls_needed or tls_given:
        tls = tls_context(ssl_ca_certs, ssl_certfile, ssl_keyfile, ssl_cert_reqs, ssl_check_hostname, ssl_password)
    return Security(tls, login(username, password), login(sentinel_username, sentinel_password, "sentinel_"))


def redact(url: str) -> str:
    """`url` with its password, if any, shown as `***` (in the user part and in a `password=`
    query parameter): what errors, status and reprs show of a node."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    netloc, tail = rest[:end], rest[end:]
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hosts}"
    tail = re.sub(r"([?&](?:ssl_)?password=)[^&#]*", r"\1***", tail)
    return f"{scheme}://{netloc}{tail}"
