"""Draws the `make bench-scale` charts from bench/scale-results.json (needs matplotlib; run by
bench/scale_charts.sh in bench/.venv).

usage: scale_charts.py RESULTS_JSON OUT_DIR   (writes OUT_DIR/scale-{locks,waiters,expiry,holders}.png)
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

COLORS = {"dlock": "tab:blue", "SET NX PX": "tab:orange", "SET PXAT": "tab:orange"}


def log_axis(ax, xlabel, ylabel, title):
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def locks_chart(results, path):
    fig, (lat, cpu, mem) = plt.subplots(1, 3, figsize=(15, 4.2))
    for name, rows in results["locks"].items():
        x = [r["locks"] for r in rows]
        color = COLORS[name]
        label = "dlock ACQUIRE + RELEASE" if name == "dlock" else "SET NX PX + EVALSHA compare-and-delete"
        lat.plot(x, [r["p50_us"] for r in rows], "o-", color=color, label=f"{label}, p50")
        lat.plot(x, [r["p99_us"] for r in rows], "s--", color=color, label=f"{label}, p99")
        cpu.plot(x, [r["server_us"] for r in rows], "o-", color=color, label=label)
        mem.plot(
            x,
            [r["bytes_per_lock"] for r in rows],
            "o-",
            color=color,
            label="dlock lock" if name == "dlock" else "SET key owner PX",
        )
    log_axis(lat, "live locks", "µs per pair (client wall time)", "one acquire+release, fresh key")
    log_axis(cpu, "live locks", "server µs per pair (INFO commandstats)", "server time per pair")
    log_axis(mem, "live locks", "bytes per lock (used_memory delta / N)", "memory per held lock")
    fig.suptitle(f"bench-scale (a), {results['date']}, Redis {results['redis_version']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def waiters_chart(results, path):
    fig, (lat, cpu, mem) = plt.subplots(1, 3, figsize=(16, 4.4))
    for layout, rows in results["waiters"].items():
        x = [r["waiters"] for r in rows]
        color = "tab:blue" if layout == "one resource" else "tab:green"
        label = layout if layout == "one resource" else "spread over min(waiters, 1000) resources"
        lat.plot(x, [r["p50_us"] for r in rows], "o-", color=color, label=f"{label}, p50")
        lat.plot(x, [r["p99_us"] for r in rows], "s--", color=color, label=f"{label}, p99")
        lat.plot(x, [r["ping_parked_p99_us"] for r in rows], ":", color=color, label=f"{label}, PING p99 (reference)")
        cpu.plot(x, [r["release_server_us"] for r in rows], "o-", color=color, label=f"{label}, RELEASE")
        cpu.plot(x, [r["park_server_us"] for r in rows], "s--", color=color, label=f"{label}, waiting ACQUIRE")
        mem.plot(x, [r["bytes_per_waiter"] / 1024 for r in rows], "o-", color=color, label=label)
    log_axis(lat, "waiters", "µs from RELEASE sent to the grant received", "handoff latency")
    log_axis(cpu, "waiters", "server µs per call (INFO commandstats)", "server time per handoff")
    log_axis(mem, "waiters", "KiB per waiter (used_memory delta / waiters)", "memory per parked waiter")
    fig.suptitle(f"bench-scale (b), {results['date']}, Redis {results['redis_version']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def expiry_chart(results, path):
    fig, (ping, keys) = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True)
    for side, summary in results["expiry"].items():
        line = summary["timeline"]
        color = COLORS[side]
        label = f"{summary['keys']:,} dlock locks" if side == "dlock" else f"{summary['keys']:,} SET keys PXAT"
        ping.plot(
            [ms for ms, _ in line["ping"]],
            [us / 1000 for _, us in line["ping"]],
            "-",
            color=color,
            label=label,
            linewidth=0.8,
        )
        keys.plot([ms for ms, _ in line["keys"]], [n for _, n in line["keys"]], "-", color=color, label=label)
    ping.set_ylabel("worst PING round trip per ms (ms)")
    ping.set_title("PING latency while the keys expire (first round)", fontsize=10)
    keys.set_ylabel("keys left (DBSIZE)")
    keys.set_xlabel("ms since the common deadline")
    for ax in (ping, keys):
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"bench-scale (c), {results['date']}, Redis {results['redis_version']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def holders_chart(results, path):
    fig, (writes, status) = plt.subplots(1, 2, figsize=(14, 4.4))
    holders = results["holders"]["per_command"]
    styles = {"semaphore": "o-", "shared": "s--"}
    for kind, rows in holders.items():
        x = [r["holders"] for r in rows]
        for command in ("acquire", "renew", "release", "extend", "fence", "replica_apply"):
            writes.plot(x, [r[command] for r in rows], styles[kind], label=f"{kind}: {command}")
        status.plot(x, [r["status"] for r in rows], styles[kind], label=f"{kind}: STATUS (COUNT 100)")
    log_axis(writes, "holders of the resource (256-byte owners)", "server µs per call", "writes")
    log_axis(status, "holders of the resource", "server µs per call", "STATUS: lists up to 100 holders")
    writes.legend(fontsize=7, ncol=2)
    fig.suptitle(f"bench-scale (d), {results['date']}, Redis {results['redis_version']}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    with open(sys.argv[1]) as f:
        results = json.load(f)
    out = sys.argv[2]
    charts = (("locks", locks_chart), ("waiters", waiters_chart), ("expiry", expiry_chart))
    if "holders" in results:
        charts += (("holders", holders_chart),)
    for name, draw in charts:
        path = os.path.join(out, f"scale-{name}.png")
        draw(results, path)
        print(f"bench-scale: chart {path}")


if __name__ == "__main__":
    main()
