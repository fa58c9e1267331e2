"""The pure parts of the check's verdict: the supervisor's reading of the judged process's
events (the runner's verdict.verdicts / build_report) and the host's reading of the supervisor's frame
(check.report_frame). Forged, replayed, reordered or missing events never make a pass."""
from __future__ import annotations

import hashlib
import os

from fixrl.sandbox.inside.check.verdict import build_report, verdicts
from fixrl.tasks.check.run import report_frame

A, B = "t.py::a", "t.py::b"
OK = {"kind": None, "rep": "passed", "wasxfail": False}


def phase(nodeid, when, **over):
    ev = {"e": "phase", "id": nodeid, "when": when, **OK, **over}
    if when == "call":
        ev.setdefault("needs_body", True)
        ev.setdefault("body", "returned")
    return ev


def run(*nodeids):
    return [e for n in nodeids for e in (phase(n, "setup"), phase(n, "call"), phase(n, "teardown"))]


COLLECTED = {"e": "collected", "ids": [A, B]}
FINISH = {"e": "finish", "exitstatus": 0}
EXITED_0 = 0  # a wait status: exited with 0


def test_a_full_honest_run_passes():
    report = build_report([COLLECTED, *run(A, B), FINISH], EXITED_0)
    assert report["tests"] == {A: "passed", B: "passed"} and report["finished"] and not report["tamper"]
    assert report["exit_code"] == 0 and report["exitstatus"] == 0


def test_a_forged_pass_cannot_hide_a_real_failure():
    """Events are monotone: every call report of a test must pass."""
    failed = phase(A, "call", kind="failed", rep="failed")
    events = [COLLECTED, phase(A, "setup"), failed, phase(A, "call"), phase(A, "teardown"), *run(B), FINISH]
    assert verdicts(events)[0][A] == "failed"


def test_events_out_of_collection_order_are_tampering():
    replay = [COLLECTED, *run(A), *run(B), phase(A, "setup"), FINISH]  # a replayed setup of a finished test
    tests, _, problems = verdicts(replay)
    assert problems and "not next" in problems[0]
    report = build_report(replay, EXITED_0)
    assert report["tamper"] and report["tests"][A] == "tampered"
    twice = [COLLECTED, phase(A, "setup"), phase(A, "call"), phase(A, "teardown"), phase(A, "teardown"), FINISH]
    assert verdicts(twice)[2]
    stranger = [COLLECTED, phase("t.py::zzz", "setup"), FINISH]
    assert verdicts(stranger)[2]
    orphan = [COLLECTED, phase(A, "call")]  # a call before any setup
    assert verdicts(orphan)[2]
    assert verdicts([COLLECTED, {"e": "phase", "id": None, "when": "call"}])[2]


def test_missing_events_and_an_early_exit_are_not_passes():
    tests, _, _ = verdicts([COLLECTED, *run(A)])
    assert tests == {A: "passed", B: "missing"}
    report = build_report([COLLECTED, *run(A, B)], EXITED_0)  # os._exit(0) before the session's end
    assert not report["finished"] and report["exitstatus"] is None
    killed = build_report([COLLECTED, *run(A, B), FINISH], 9)  # a wait status: killed by SIGKILL
    assert killed["exit_code"] == 128 + 9


def test_body_setup_and_teardown_rules():
    not_run = [COLLECTED, phase(A, "setup"), phase(A, "call", body="not entered"), phase(A, "teardown")]
    assert verdicts(not_run)[0][A] == "tampered"
    changed = [COLLECTED, phase(A, "setup"), phase(A, "call", body="changed after collection"), phase(A, "teardown")]
    assert verdicts(changed)[0][A] == "tampered"
    skipped = [COLLECTED, phase(A, "setup", kind="skipped", rep="skipped"), phase(A, "teardown")]
    assert verdicts(skipped)[0][A] == "skipped"
    xpass = [COLLECTED, phase(A, "setup"), phase(A, "call", wasxfail=True), phase(A, "teardown")]
    assert verdicts(xpass)[0][A] == "xpassed"
    bad_teardown = [COLLECTED, phase(A, "setup"), phase(A, "call"), phase(A, "teardown", kind="failed", rep="failed")]
    assert verdicts(bad_teardown)[0][A] == "error"


def test_garbage_and_tamper_events_fail_the_run():
    report = build_report([COLLECTED, {"e": "garbled"}, *run(A, B), FINISH], EXITED_0)
    assert report["tamper"] and set(report["tests"].values()) == {"tampered"}
    report = build_report([COLLECTED, *run(A, B), {"e": "tamper", "what": "sys._getframe: by calc.py:3"}, FINISH],
                          EXITED_0)
    assert report["tamper"] == ["sys._getframe: by calc.py:3"]
    report = build_report([COLLECTED, *run(A, B), {**FINISH, "tamper": ["pytest was modified"]}], EXITED_0)
    assert report["tamper"] == ["pytest was modified"]


def test_a_stopped_run_names_the_test_it_was_in():
    stop = {"e": "tamper", "what": "fixrl.compare: ..."}
    in_call = build_report([COLLECTED, *run(A), phase(B, "setup"), stop], 97 << 8)
    assert in_call["stopped_in"] == B and in_call["tests"] == {A: "tampered", B: "missing"}
    in_setup = build_report([COLLECTED, *run(A), stop], 97 << 8)  # B's setup never reported
    assert in_setup["stopped_in"] == B
    at_collection = build_report([COLLECTED, stop], 97 << 8)
    assert at_collection["stopped_in"] is None
    at_the_end = build_report([COLLECTED, *run(A, B), stop], 97 << 8)
    assert at_the_end["stopped_in"] is None
    assert build_report([COLLECTED, *run(A, B), FINISH], EXITED_0)["stopped_in"] is None  # no stop


def test_report_frame_is_found_and_stripped():
    body = b'{"tests": {}}'
    digest = hashlib.sha256(body).hexdigest()
    frame = f"\n\x00fixrl-check-report {digest} {len(body)}\x00\n"
    out, got = report_frame("1 passed\n" + frame + "[sandbox: a note]\n")
    assert got == (digest, len(body)) and out == "1 passed\n\n[sandbox: a note]\n"
    assert report_frame("fixrl-check-report " + digest + " 13\n") == ("fixrl-check-report " + digest + " 13\n", None)
    # the last frame counts (only the supervisor can write one; it writes it last)
    other = hashlib.sha256(b"x").hexdigest()
    assert report_frame(frame + frame.replace(digest, other))[1] == (other, len(body))


def test_wait_status_helpers_agree_with_os():
    assert os.WIFEXITED(EXITED_0) and os.WEXITSTATUS(EXITED_0) == 0
