"""Markdown tables and goal verdicts for `make bench-scale` (from scale.py's results dict)."""

FLAT = 1.25  # a curve is flat when its largest point is within 1.25x of its smallest
STALL_MARGIN = 1.2  # dlock's stall may exceed SET's by 20% (run-to-run noise) and still pass


def ratio_row(values):
    return max(values) / min(values)


def locks_table(locks):
    dlock, setnx = locks["dlock"], locks["SET NX PX"]
    lines = [
        "| live locks | dlock p50 µs | p99 µs | server µs/pair | SET NX PX + script p50 µs | p99 µs | "
        "server µs/pair | p50 ratio | dlock B/lock | SET PX B/key | memory ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d, s in zip(dlock, setnx, strict=True):
        lines.append(
            f"| {d['locks']:,} | {d['p50_us']:.0f} | {d['p99_us']:.0f} | {d['server_us']:.2f} | "
            f"{s['p50_us']:.0f} | {s['p99_us']:.0f} | {s['server_us']:.2f} | "
            f"**{d['p50_us'] / s['p50_us']:.2f}x** | {d['bytes_per_lock']:.1f} | {s['bytes_per_lock']:.1f} | "
            f"**{d['bytes_per_lock'] / s['bytes_per_lock']:.2f}x** |"
        )
    return lines


def waiters_table(waiters):
    one, spread = waiters["one resource"], {r["waiters"]: r for r in waiters["spread"]}
    lines = [
        "| waiters | layout | handoff p50 µs | p99 µs | max µs | server µs per RELEASE (handoff) | "
        "server µs per waiting ACQUIRE | PING p99 µs, all idle / all parked | B per waiter |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in one:
        s = spread.get(o["waiters"])
        for label, r in (("one resource", o), (f"spread over {s['resources']:,}" if s else "", s)):
            if r is None:
                continue
            lines.append(
                f"| {o['waiters']:,} | {label} | {r['p50_us']:.0f} | {r['p99_us']:.0f} | {r['max_us']:.0f} | "
                f"{r['release_server_us']:.1f} | {r['park_server_us']:.1f} | "
                f"{r['ping_idle_p99_us']:.0f} / {r['ping_parked_p99_us']:.0f} | {r['bytes_per_waiter']:,.0f} |"
            )
    return lines


def expiry_table(expiry):
    lines = [
        "| keys expiring | deadlines spread (ms) | all gone after (ms) | PING max (ms, median of rounds) | "
        "worst max (ms) | PING p99 in the window (ms) | PING p99 before the deadline (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for side, s in expiry.items():
        low, high = s["spread_ms"]
        lines.append(
            f"| {s['keys']:,} {side} | {low}..{high} | {s['gone_ms']:.0f} | **{s['max_ms']:.2f}** | "
            f"{s['worst_max_ms']:.2f} | {s['p99_ms']:.2f} | {s['before_p99_ms']:.2f} |"
        )
    return lines


COMMANDS = ("acquire", "renew", "release", "extend", "fence", "replica_apply", "status")
HOLDER_FLAT = 2.0  # issue 35: server time per command within 2x from 1 to 10,000 holders
STALL_GOAL_MS = 5.0
WRITE_GOAL_US = 2_000.0


def holders_table(holders):
    lines = [
        "| kind | holders | " + " | ".join(COMMANDS) + " |",
        "|---|---|" + "---|" * len(COMMANDS),
    ]
    for kind, rows in holders["per_command"].items():
        for r in rows:
            cells = " | ".join(f"{r[c]:.1f}" for c in COMMANDS)
            lines.append(f"| {kind} | {r['holders']:,} | {cells} |")
    return lines


def stall_table(holders):
    lines = [
        "| leases ending together | waiters | PING max (ms) | PING p99 (ms) | last grant after the deadline (ms) |",
        "|---|---|---|---|---|",
    ]
    for s in holders["stall"]:
        lines.append(
            f"| {s['ending']:,} | {s['ending']:,} | **{s['ping_max_us'] / 1000:.2f}** | "
            f"{s['ping_p99_us'] / 1000:.2f} | {s['last_grant_after_deadline_ms']} |"
        )
    return lines


def holder_goals(holders):
    rows = []
    for kind, by_count in holders["per_command"].items():
        span = f"{by_count[0]['holders']:,}..{by_count[-1]['holders']:,} holders"
        for c in COMMANDS[:-1]:
            values = [r[c] for r in by_count]
            spread = ratio_row(values)
            rows.append((f"{kind}: server µs per {c} flat within {HOLDER_FLAT}x, {span}", f"{spread:.2f}",
                         verdict(spread <= HOLDER_FLAT)))
        worst = max(r[c] for r in by_count for c in COMMANDS[:-1])
        rows.append((f"{kind}: every write under {WRITE_GOAL_US / 1000:.0f} ms of server time", f"{worst:.1f} µs",
                     verdict(worst < WRITE_GOAL_US)))
        statuses = [r["status"] for r in by_count]
        rows.append((f"{kind}: STATUS bounded by its COUNT (100) from 100 holders up",
                     f"{min(statuses):.0f}..{max(statuses):.0f} µs", verdict(ratio_row(statuses[2:]) <= HOLDER_FLAT)))
    worst_ping = max(s["ping_max_us"] for s in holders["stall"]) / 1000
    rows.append((f"PING never stalled over {STALL_GOAL_MS:.0f} ms while leases end with waiters queued",
                 f"{worst_ping:.2f} ms", verdict(worst_ping <= STALL_GOAL_MS)))
    return rows


def verdict(ok):
    return "met" if ok else "missed"


def flat(label, values, note=""):
    """A goal row: the curve's largest point within FLAT of its smallest."""
    spread = ratio_row(values)
    return (f"{label} flat (max/min <= {FLAT})", f"{spread:.2f}{note}", verdict(spread <= FLAT))


def goals(results):
    """(goal, measured, verdict) rows."""
    d, s = results["locks"]["dlock"], results["locks"]["SET NX PX"]
    sizes = f"{d[0]['locks']:,}..{d[-1]['locks']:,} locks"
    rows = []
    for label, key in (("p50", "p50_us"), ("p99", "p99_us")):
        theirs = f" (SET NX PX: {ratio_row([r[key] for r in s]):.2f})"
        rows.append(flat(f"acquire+release {label}, {sizes}", [r[key] for r in d], theirs))
    theirs = f" (SET NX PX + script: {ratio_row([r['server_us'] for r in s]):.2f})"
    rows.append(flat(f"server µs per acquire+release, {sizes}", [r["server_us"] for r in d], theirs))
    per_lock = [r["bytes_per_lock"] / q["bytes_per_lock"] for r, q in zip(d, s, strict=True)]
    extremes = f" ({min(per_lock):.2f}x..{max(per_lock):.2f}x)"
    rows.append(flat(f"bytes per lock / bytes per SET key, {sizes}", per_lock, extremes))
    for layout, by_count in results["waiters"].items():
        counts = f"{by_count[0]['waiters']:,}..{by_count[-1]['waiters']:,} waiters"
        rows.append(flat(f"handoff p99, {layout}, {counts}", [r["p99_us"] for r in by_count]))
        rows.append(flat(f"server µs per RELEASE, {layout}, {counts}", [r["release_server_us"] for r in by_count]))
        rows.append(flat(f"server µs per waiting ACQUIRE, {layout}, {counts}", [r["park_server_us"] for r in by_count]))
        rows.append(flat(f"bytes per waiter, {layout}, {counts}", [r["bytes_per_waiter"] for r in by_count]))
    e = results["expiry"]
    stall = e["dlock"]["max_ms"] / e["SET PXAT"]["max_ms"]
    rows.append(
        (
            f"expiry stall no worse than SET PXAT's (PING max, <= {STALL_MARGIN}x)",
            f"{stall:.2f}x",
            verdict(stall <= STALL_MARGIN),
        )
    )
    if "holders" in results:
        rows += holder_goals(results["holders"])
    return rows


def render(results):
    plan = results["plan"]
    out = [
        f"Run of {results['date']}, Redis {results['redis_version']}, "
        f"{results['minutes']:.1f} min, load average before/after "
        f"{results['load_before'][0]:.2f} / {results['load_after'][0]:.2f}.",
        "",
        f"### (a) acquire+release and memory per lock ({plan['samples']} pairs per size per round, "
        f"{plan['lock_rounds']} rounds, sides alternated; medians of the rounds)",
        "",
        *locks_table(results["locks"]),
        "",
        f"### (b) handoffs and memory per waiter ({plan['handoffs']} handoffs per count per round, "
        f"{plan['waiter_rounds']} rounds, layouts alternated; medians of the rounds, max of all)",
        "",
        *waiters_table(results["waiters"]),
        "",
        f"### (c) {plan['expiring']:,} keys expiring in the same millisecond ({plan['expiry_rounds']} rounds, "
        "sides alternated)",
        "",
        *expiry_table(results["expiry"]),
        "",
        f"### (d) one resource of {plan['holders'][0]:,} .. {plan['holders'][-1]:,} holders, 256-byte owners: "
        f"server µs per call ({plan['holder_ops']} calls of each write, a tenth as many STATUS, "
        "a fresh server and replica per size)",
        "",
        *holders_table(results["holders"]),
        "",
        f"Freeing 10,000 holders (FORCERELEASE): {results['holders']['forcerelease_us']:.0f} µs of server time.",
        "",
        "Leases ending together on a semaphore of 10,000 permits, with as many waiters queued:",
        "",
        *stall_table(results["holders"]),
        "",
        "### Goals",
        "",
        "| goal | measured | result |",
        "|---|---|---|",
        *(f"| {g} | {m} | {v} |" for g, m, v in goals(results)),
        "",
    ]
    return "\n".join(out)


def check(results_json, page):
    """The differences between the tables `results_json` renders to and those between the page's
    `bench-scale` markers ([] when the page shows those figures)."""
    import difflib
    import json

    with open(results_json) as f:
        rendered = render(json.load(f)).strip("\n").split("\n")
    with open(page) as f:
        text = f.read()
    start = text.index("-->", text.index("<!-- bench-scale:start")) + len("-->")
    shown = text[start : text.index("<!-- bench-scale:end -->")].strip("\n").split("\n")
    return list(difflib.unified_diff(shown, rendered, "the page", "bench/scale-results.json", lineterm=""))


if __name__ == "__main__":
    # `python3 bench/scale_report.py`: whether docs/bench/scale.md shows bench/scale-results.json
    # (run by tests/docs/test_docs.py).
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    differences = check(os.path.join(here, "scale-results.json"), os.path.join(here, "..", "docs", "bench", "scale.md"))
    print("\n".join(differences) or "docs/bench/scale.md shows bench/scale-results.json")
    sys.exit(1 if differences else 0)
