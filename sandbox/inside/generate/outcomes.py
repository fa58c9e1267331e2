"""The generator's pytest plugin: each test's outcome and failure as JSON, written at session
end to the file FIXRL_GEN_REPORT names (pytest >= 7).

Shipped as a file beside the repository copy (`tasks.generate.execute`), followed by
`failure_capture`'s code in the same file, and loaded with `-p`: standard library and pytest
only, self-contained (no imports of its package), no `from __future__` (code follows it).
"""
import json
import os

_tests = {}
_collect_errors = []


def _rel(path):
    path = str(path)
    cwd = os.getcwd()
    if os.path.isabs(path) and path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    return path


def _failure(report):
    lr = report.longrepr
    info = {"message": "", "entries": []}
    crash = getattr(lr, "reprcrash", None)
    if crash is not None:
        info["message"] = crash.message
    tb = getattr(lr, "reprtraceback", None)
    for entry in getattr(tb, "reprentries", None) or []:
        loc = getattr(entry, "reprfileloc", None)
        if loc is not None:
            info["entries"].append([_rel(loc.path), loc.lineno])
    if not info["message"]:
        info["message"] = (getattr(report, "longreprtext", "") or "")[-2000:]
    info["detail"] = getattr(report, "_fixrl_detail", None)  # from the capture code below
    return info


def _note_running(nodeid):
    try:
        with open(os.environ["FIXRL_GEN_REPORT"] + ".running", "w") as f:
            f.write(nodeid)
    except OSError:
        pass


def pytest_sessionstart(session):
    _note_running("")  # a reused workspace's note of an earlier run names nothing of this one


def pytest_runtest_logstart(nodeid, location):
    # The test now running, for a run stopped by its time limit (no report at the end): the
    # generator then names the test that hung. One small write per test; not guaranteed to be
    # the culprit when the hang is in a session-wide fixture's teardown.
    _note_running(nodeid)


def pytest_runtest_logreport(report):
    t = _tests.setdefault(report.nodeid, {"outcome": None})
    if report.failed:
        if t["outcome"] not in ("failed", "error"):
            t["outcome"] = "failed" if report.when == "call" else "error"
            t.update(_failure(report))
    elif report.skipped:
        if t["outcome"] is None:
            t["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call" and t["outcome"] is None:
        t["outcome"] = "passed"


def pytest_collectreport(report):
    if report.failed:
        _collect_errors.append(report.nodeid or "<session>")


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["FIXRL_GEN_REPORT"], "w") as f:
        json.dump({"tests": _tests, "collect_errors": _collect_errors, "exitstatus": int(exitstatus)}, f)
