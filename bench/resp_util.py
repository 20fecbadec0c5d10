"""Shared by the stdlib-only bench scripts: a free port, a RESP encoder, one command's reply,
and a redis-server with the module on a temp dir."""
import os, socket, subprocess, time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def command(sock, *args):
    """Sends one command and reads its reply (bulk replies read whole)."""
    sock.sendall(resp(*args))
    data = b""
    while not complete(data):
        data += sock.recv(1 << 20)
    return data


def complete(data):
    if not data.endswith(b"\r\n"):
        return False
    if data.startswith(b"$") and not data.startswith(b"$-1"):
        return data.count(b"\r\n") >= 2  # header, then the payload
    return True


def start_server(module, directory, *extra):
    """redis-server ($REDIS_SERVER, else the one on PATH) with the module; returns (process,
    connected socket)."""
    port = free_port()
    server = subprocess.Popen(
        [os.environ.get("REDIS_SERVER", "redis-server"), "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", directory, *extra, "--loadmodule", module],
        stdout=subprocess.DEVNULL)
    for _ in range(100):
        try:
            return server, socket.create_connection(("127.0.0.1", port)), port
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("redis-server did not start")
