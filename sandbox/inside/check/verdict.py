"""The verdict, pure: each test's outcome from the judged process's events, and the report."""
from __future__ import annotations

import os

from .base import MAX_REPORT_IDS


def build_report(events, status):
    """The report from the judged process's events and wait status (see `verdicts`)."""
    tests, order, problems = verdicts(events)
    finish = next((e for e in events if e.get("e") == "finish"), None)
    tamper = [e.get("what", "?") for e in events if e.get("e") == "tamper"] + problems
    if finish:
        tamper += list(finish.get("tamper", []))
    if status is None:
        exit_code = 1
    elif os.WIFEXITED(status):
        exit_code = os.WEXITSTATUS(status)
    else:
        exit_code = 128 + os.WTERMSIG(status)
    stopped_in = _running(events, order) if tamper else None
    if tamper:
        tests = {k: ("tampered" if v == "passed" else v) for k, v in tests.items()}
    listed = dict(list(tests.items())[:MAX_REPORT_IDS])
    return {"tests": listed, "unlisted_passed": sum(v == "passed" for v in list(tests.values())[MAX_REPORT_IDS:]),
            "unlisted": max(len(tests) - MAX_REPORT_IDS, 0), "collected": len(order),
            "finished": finish is not None, "exitstatus": finish.get("exitstatus") if finish else None,
            "exit_code": exit_code, "tamper": tamper[:50], "stopped_in": stopped_in}


def _running(events, order):
    """The test a stopped run was in: one whose setup reported and whose teardown never did,
    else the next in collection order after the last test that reported (stopped in its setup);
    None before the first test reported or after the last one."""
    current = last = None
    for ev in events:
        if ev.get("e") == "phase" and isinstance(ev.get("id"), str):
            last = ev["id"]
            if ev.get("when") == "setup":
                current = last
            elif ev.get("when") == "teardown" and last == current:
                current = None
    if current is not None or last not in order:
        return current
    after = order.index(last) + 1
    return order[after] if after < len(order) else None


def verdicts(events):
    """(nodeid -> outcome, collection order, problems). Events must follow the collection
    order: one setup, then call reports, then one teardown per test; anything else is a
    problem (a forged or replayed event), which makes the run a fail."""
    order, problems, recs = [], [], {}
    position, current = 0, None
    for ev in events:
        kind = ev.get("e")
        if kind == "collected":
            order += [i for i in ev.get("ids", []) if isinstance(i, str)]
        elif kind == "phase":
            nodeid, when = ev.get("id"), ev.get("when")
            if when == "setup":
                try:  # tests that never ran (-x, an interrupted session) have no events
                    position = order.index(nodeid, position) + 1
                except ValueError:
                    problems.append(f"an event for a test that was not next: {nodeid}")
                    continue
                current = nodeid
                recs[nodeid] = {"setup": ev}
            elif current is None or nodeid != current or when not in ("call", "teardown") \
                    or "teardown" in recs[current]:
                problems.append(f"an event out of order: {nodeid} {when}")
            elif when == "call":
                recs[nodeid].setdefault("calls", []).append(ev)
            else:
                recs[nodeid]["teardown"] = ev
        elif kind == "garbled":
            problems.append("an event that is not JSON")
    return {n: phase_verdict(recs.get(n)) for n in order}, order, problems


def phase_verdict(rec):
    """One test's outcome from its phase events (each has kind: null | skipped | xfailed |
    failed, rep: pytest's outcome, wasxfail, and for calls body: returned | raised | ...)."""
    if rec is None:
        return "missing"
    setup, calls, teardown = rec["setup"], rec.get("calls", []), rec.get("teardown")
    if setup.get("kind") == "skipped":
        return "xfailed" if setup.get("wasxfail") else "skipped"
    if setup.get("kind") is not None or setup.get("rep") != "passed":
        return "error"
    if not calls:
        return "missing"
    for call in calls:
        if call.get("wasxfail"):
            return "xfailed" if call.get("kind") is not None else "xpassed"
        if call.get("kind") in ("skipped", "xfailed"):
            return call["kind"]
        if call.get("kind") is not None or call.get("rep") != "passed":
            return "failed"
    if calls[-1].get("needs_body") and calls[-1].get("body") != "returned":
        return "tampered"
    if teardown is None or teardown.get("kind") is not None or teardown.get("rep") != "passed":
        return "error"
    return "passed"
