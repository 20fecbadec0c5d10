"""etcd's election through its HTTP gateway (the v3 JSON API), standard library only: the anchor
`make bench-elect` measures dlock against. A candidate grants a lease of TTL seconds, keeps it
alive every TTL/3 as clientv3's session does, campaigns, and on election writes the time (ns)
to a file; killed, its lease ends one TTL later and the next candidate's campaign returns.

usage (as a candidate process): elect_etcd.py ENDPOINT NAME VALUE TTL_S OUT_FILE
"""
import base64, json, os, subprocess, sys, tempfile, threading, time, urllib.request

from resp_util import free_port


def post(endpoint, path, body, timeout=None):
    request = urllib.request.Request(endpoint + path, json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def b64(text):
    return base64.b64encode(text.encode()).decode()


def start(directory):
    """A one-member etcd with a short election timeout (so that leases of 1 s are allowed);
    returns (process, endpoint)."""
    client, peer = free_port(), free_port()
    endpoint = f"http://127.0.0.1:{client}"
    process = subprocess.Popen(
        ["etcd", "--data-dir", os.path.join(directory, "etcd"), "--listen-client-urls", endpoint,
         "--advertise-client-urls", endpoint, "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"default=http://127.0.0.1:{peer}",
         "--election-timeout", "100", "--heartbeat-interval", "20"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            post(endpoint, "/v3/kv/range", {"key": b64("ping")}, timeout=1)
            return process, endpoint
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("etcd did not start")


def leader(endpoint, name):
    """The leader's value, or None."""
    try:
        kv = post(endpoint, "/v3/election/leader", {"name": b64(name)}, timeout=2)["kv"]
        return base64.b64decode(kv["value"]).decode()
    except (OSError, KeyError):
        return None


def observe(endpoint, name, heard):
    """Follows the leader (the gateway's streaming observe): appends (value, ns) to `heard` as
    each leader is announced. Runs until the process ends."""
    request = urllib.request.Request(
        endpoint + "/v3/election/observe", json.dumps({"name": b64(name)}).encode(), method="POST")

    def follow():
        with urllib.request.urlopen(request) as stream:
            for line in stream:
                at = time.time_ns()
                kv = json.loads(line).get("result", {}).get("kv", {})
                if "value" in kv:
                    heard.append((base64.b64decode(kv["value"]).decode(), at))

    threading.Thread(target=follow, daemon=True).start()


def candidate(endpoint, name, value, ttl, out):
    lease = post(endpoint, "/v3/lease/grant", {"TTL": ttl})["ID"]

    def keep_alive():
        while True:
            post(endpoint, "/v3/lease/keepalive", {"ID": lease}, timeout=ttl)
            time.sleep(ttl / 3)

    threading.Thread(target=keep_alive, daemon=True).start()
    post(endpoint, "/v3/election/campaign", {"name": b64(name), "lease": lease, "value": b64(value)})
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(out), delete=False) as f:
        f.write(str(time.time_ns()))
    os.rename(f.name, out)
    time.sleep(3600)


if __name__ == "__main__":
    endpoint, name, value, ttl, out = sys.argv[1:6]
    candidate(endpoint, name, value, int(ttl), out)
