"""A small buffered RESP2 connection for the `make bench-scale` harness (standard library only):
one command's reply, pipelined batches, and the INFO fields the harness reads."""

import socket
import time

from resp_util import resp


class ReplyError(Exception):
    """An error reply (`-ERR ...`)."""


def parse(buf, pos):
    """One reply from `buf` at `pos`: (value, next position), or None when incomplete. Errors
    are returned as ReplyError values, not raised, so a pipeline can read past them."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    kind, line, after = buf[pos], bytes(buf[pos + 1 : end]), end + 2
    if kind == ord("+"):
        return line.decode(), after
    if kind == ord("-"):
        return ReplyError(line.decode()), after
    if kind == ord(":"):
        return int(line), after
    if kind == ord("$"):
        size = int(line)
        if size < 0:
            return None, after
        if len(buf) < after + size + 2:
            return None
        return bytes(buf[after : after + size]), after + size + 2
    if kind == ord("*"):
        return parse_array(buf, int(line), after)
    raise ValueError(f"unexpected reply type {chr(kind)!r}")


def parse_array(buf, count, pos):
    if count < 0:
        return None, pos
    items = []
    for _ in range(count):
        got = parse(buf, pos)
        if got is None:
            return None
        item, pos = got
        items.append(item)
    return items, pos


class Conn:
    """One client connection with a read buffer."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def send(self, *args):
        self.sock.sendall(resp(*args))

    def reply(self):
        """The next reply; raises ReplyError for an error reply."""
        value = self.next_value()
        if isinstance(value, ReplyError):
            raise value
        return value

    def next_value(self):
        while True:
            got = parse(self.buf, self.pos) if self.pos < len(self.buf) else None
            if got is not None:
                value, self.pos = got
                if self.pos == len(self.buf):
                    self.buf.clear()
                    self.pos = 0
                return value
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("server closed the connection")
            self.buf += data

    def call(self, *args):
        self.send(*args)
        return self.reply()

    def pipeline(self, payload, count):
        """Sends `count` commands encoded in `payload`, reads their replies; raises on an error."""
        self.sock.sendall(payload)
        replies = [self.next_value() for _ in range(count)]
        errors = [r for r in replies if isinstance(r, ReplyError)]
        if errors:
            raise errors[0]
        return replies

    def close(self):
        self.sock.close()


def info_field(conn, section, field):
    """An integer field of INFO `section`."""
    text = conn.call("INFO", section).decode()
    for line in text.split("\r\n"):
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise KeyError(field)


def command_usec(conn, names):
    """(calls, usec) summed over the named commands since CONFIG RESETSTAT (INFO commandstats)."""
    text = conn.call("INFO", "commandstats").decode()
    calls = usec = 0
    for line in text.split("\r\n"):
        name, _, fields = line.partition(":")
        if name.removeprefix("cmdstat_") in names:
            values = dict(f.split("=") for f in fields.split(","))
            calls += int(values["calls"])
            usec += int(values["usec"])
    return calls, usec


def used_memory(conn):
    return info_field(conn, "memory", "used_memory")


def wait_until(predicate, timeout_s, what):
    """Polls `predicate` every millisecond until it holds; raises TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.001)


def now_ms():
    return time.time_ns() // 1_000_000


def percentile(values, p):
    """Nearest-rank percentile (as bench/src/lib.rs); NaN for an empty sample."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * p // 100)))
    return ordered[int(rank) - 1]


def median(values):
    return percentile(values, 50)
