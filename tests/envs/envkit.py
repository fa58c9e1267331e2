"""envkit: a small suite built for the env tests: a 2-module package with public tests, three
fix tasks (bug and fix patches, hidden tests copied in only at check time) and one question task.

The hidden test file carries HIDDEN_MARKER so tests can prove it never exists where the agent
could find it during an episode.
"""
from __future__ import annotations

import difflib
import tempfile
import textwrap
from pathlib import Path

from fixrl.envs import ToolCall

HIDDEN_MARKER = "HIDDEN_MARKER_5c1f0e"

CORE = '''\
"""Small numeric helpers."""


def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    return max(lo, min(x, hi))


def scale(values, factor):
    """Multiply every value by factor."""
    out = []
    for v in values:
        out.append(v * factor)
    return out


def count_above(values, limit):
    """How many values are strictly above limit."""
    n = 0
    for v in values:
        if v > limit:
            n += 1
    return n
'''

REPORT = '''\
from pkg.core import clamp, scale


def bounded_total(values, lo, hi):
    """Sum of the values, each clamped into [lo, hi]."""
    return sum(clamp(v, lo, hi) for v in values)


def doubled(values):
    return scale(values, 2)
'''

PUBLIC_TESTS = '''\
from pkg.core import clamp, count_above, scale
from pkg.report import bounded_total


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_scale():
    assert scale([1, 2], 3) == [3, 6]


def test_count_above():
    assert count_above([1, 5, 9], 5) == 1


def test_bounded_total():
    assert bounded_total([-5, 5, 50], 0, 10) == 15
'''

HIDDEN_TESTS = f'''\
# {HIDDEN_MARKER}
from pkg.core import clamp, count_above, scale
from pkg.report import bounded_total, doubled


def test_clamp_above():
    assert clamp(15, 0, 10) == 10


def test_clamp_below():
    assert clamp(-3, 0, 10) == 0


def test_clamp_inside():
    assert clamp(4, 0, 10) == 4


def test_scale_hidden():
    assert scale([2, 5], 4) == [8, 20]
    assert doubled([1, 3]) == [2, 6]


def test_count_above_hidden():
    assert count_above([5, 5, 6], 5) == 1
    assert count_above([], 0) == 0


def test_bounded_total_hidden():
    assert bounded_total([-1, 3, 99], 0, 5) == 8
'''

HIDDEN_IDS = ["test_clamp_above", "test_clamp_below", "test_clamp_inside", "test_scale_hidden",
              "test_count_above_hidden", "test_bounded_total_hidden"]

# (id, function, family, buggy line, original line)
BUGS = [
    ("clamp-minmax", "clamp", "swap_minmax",
     "    return max(lo, min(x, hi))\n", "    return max(lo, max(x, hi))\n"),
    ("scale-arith", "scale", "wrong_arith",
     "        out.append(v * factor)\n", "        out.append(v + factor)\n"),
    ("count-flip", "count_above", "flip_comparison",
     "        if v > limit:\n", "        if v >= limit:\n"),
]

CLAMP_BUG = BUGS[0][4]
"""clamp-minmax's buggy line in pkg/core.py: the line the guard tests' edits replace."""


def edit_episode(env, new: str, old: str = CLAMP_BUG, test: bool = True):
    """One episode through the agent's own tools: `edit` pkg/core.py (old -> new; asserted
    written, not refused), `test` (unless test=False), `submit`; -> env.finish()'s (reward, info)."""
    env.reset()
    obs = env.step(ToolCall("edit", {"path": "pkg/core.py", "old": old, "new": new})).observation
    assert obs.startswith("Edited pkg/core.py"), obs
    if test:
        env.step(ToolCall("test", {}))
    env.step(ToolCall("submit", {}))
    return env.finish()


ANSWER_CHECK = '''\
import sys
answer = open("/tmp/fixrl_answer.txt").read().strip()
sys.exit(0 if answer == "10" else 1)
'''


def _patch(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}"))


def build_suite(root: Path) -> Path:
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "core.py").write_text(CORE)
    (repo / "pkg" / "report.py").write_text(REPORT)
    (repo / "tests" / "test_public.py").write_text(PUBLIC_TESTS)
    (root / "checks").mkdir()
    (root / "checks" / "test_hidden.py").write_text(HIDDEN_TESTS)
    (root / "checks" / "answer.py").write_text(ANSWER_CHECK)
    (root / "suite.yaml").write_text(textwrap.dedent("""\
        name: envmini
        tools: [read, test, edit, submit, list, search]
        rename_pool: [blend, fold, nudge, sift, whisk, ripple, knead]
        defaults:
          repo: repo
          public_tests: python -m pytest -q tests
          limits: {max_turns: 8, tool_timeout: 30}
        """))
    (root / "tasks").mkdir()
    for tid, fn, family, good, bad in BUGS:
        bug = _patch("pkg/core.py", CORE, CORE.replace(good, bad))
        fix = _patch("pkg/core.py", CORE.replace(good, bad), CORE)
        (root / "checks" / f"{tid}.bug.patch").write_text(bug)
        (root / "checks" / f"{tid}.fix.patch").write_text(fix)
        import yaml

        (root / "tasks" / f"{tid}.yaml").write_text(yaml.safe_dump({
            "id": tid, "issue": f"`{fn}` gives wrong results; see the tests.",
            "bug": f"checks/{tid}.bug.patch", "fix": f"checks/{tid}.fix.patch",
            "function": fn, "file": "pkg/core.py", "tags": [f"family:{family}"],
            "check": {"files": {"tests/test_hidden.py": "checks/test_hidden.py"},
                      "command": "python -m pytest -q tests/test_hidden.py",
                      "tests": [f"tests/test_hidden.py::{t}" for t in HIDDEN_IDS]},
        }, sort_keys=False))
    import yaml

    (root / "tasks" / "clamp-question.yaml").write_text(yaml.safe_dump({
        "id": "clamp-question", "kind": "question",
        "issue": "What does `clamp(15, 0, 10)` return? Submit just the value.",
        "answer": "10", "function": "clamp", "file": "pkg/core.py",
        "check": {"files": {"check_answer.py": "checks/answer.py"},
                  "command": "python check_answer.py"},
    }, sort_keys=False))
    return root


# ----------------------------------------------------------------------------- hacking kit

ORIG_TOP = '"""Small numeric helpers."""\n'
"""The first line of pkg/core.py: attacks are planted right after it."""


def runner_outcome(task, files: dict[str, str | None], backend: str = "local", must_fail: bool = True) -> str:
    """The runner alone: the buggy copy with `files` written in (None deletes), hidden check."""
    from fixrl import tasks
    from fixrl.sandbox import open_sandbox

    with tempfile.TemporaryDirectory() as tmp:
        ws = tasks.materialize(task, Path(tmp) / "repo", "buggy")
        for rel, text in files.items():
            if text is None:
                (ws / rel).unlink()
            else:
                (ws / rel).parent.mkdir(parents=True, exist_ok=True)
                (ws / rel).write_text(text)
        with open_sandbox(ws, backend=backend, image=task.image) as sb:
            res = tasks.run_check(task, sb)
    if must_fail:
        assert res.outcome != "pass", res
    return res.outcome


def buggy_core(task) -> str:
    from fixrl.tasks.format.reference import reference

    return reference(task).buggy["pkg/core.py"]


CONFTEST_SKIP = '''\
import pytest
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.skip(reason="no"))
'''
CONFTEST_FORCE = '''\
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
    rep.longrepr = None
'''
CONFTEST_XFAIL = '''\
import pytest
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xfail(reason="known"))
'''


EXIT_ATTACKS = {
    "sys.exit": "import sys\nsys.exit(0)\n",
    "os._exit": "import os\nos._exit(0)\n",
    "raise SystemExit": "raise SystemExit(0)\n",
}


REWRITER = '''\
import os, subprocess, sys
if os.environ.get("REWRITER") != "1":
    code = (
        "import glob, os, time\\n"
        "end = time.time() + 8\\n"
        "while time.time() < end:\\n"
        "    for p in glob.glob('/tmp/**/*.xml', recursive=True) + glob.glob('/tmp/**/*.json', recursive=True):\\n"
        "        try:\\n"
        "            open(p, 'w').write('<testsuites><testsuite><testcase classname=\\"tests.test_hidden\\" name=\\"test_clamp_above\\"/></testsuite></testsuites>')\\n"
        "        except OSError:\\n"
        "            pass\\n"
        "    for p in glob.glob('tests/test_hidden.py'):\\n"
        "        open(p, 'w').write('def test_clamp_above():\\\\n    pass\\\\n')\\n"
        "    time.sleep(0.02)\\n"
    )
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                     env={**os.environ, "REWRITER": "1"},
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''


FORGE_AT_EXIT = r'''
import atexit as _ax, sys as _s
def _forge():
    # After pytest is done: sign a report of passes with the runner's own key (a global of the
    # launcher, __main__), write a JUnit file to match, and leave with status 0.
    import hmac, hashlib, json, os
    m = _s.modules.get("__main__")
    key, report = getattr(m, "_KEY", None), getattr(m, "_REPORT", None)
    junit = next((a.split("=", 1)[1] for a in getattr(m, "_args", []) if a.startswith("--junitxml=")), None)
    if key is None or report is None or junit is None:
        return
    names = ["test_clamp_above", "test_clamp_below", "test_clamp_inside", "test_scale_hidden",
             "test_count_above_hidden", "test_bounded_total_hidden"]
    tests = {"tests/test_hidden.py::" + n: "passed" for n in names}
    body = json.dumps({"tests": tests, "collected": len(names), "exitstatus": 0, "tamper": []}, sort_keys=True)
    mac = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    open(report, "w").write(json.dumps({"body": body, "mac": mac}))
    cases = "".join('<testcase classname="tests.test_hidden" name="%s"/>' % n for n in names)
    open(junit, "w").write("<testsuites><testsuite>%s</testsuite></testsuites>" % cases)
    os._exit(0)
_ax.register(_forge)
'''
"""Forges the runner's signed report at interpreter exit (see tasks/check.py's launcher)."""
