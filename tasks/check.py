"""The hidden check: the reward's heart, written to resist reward hacking.

`run_check(task, sb, answer)` copies the hidden check files into the sandbox (which already
holds the repository state to judge) and runs the check command.

Pytest checks do not trust the process they run in. The command is rewritten to start pytest
from a one-shot launcher written to a random directory under /tmp (outside the workspace),
which deletes itself, imports the real pytest before the workspace goes on sys.path (so a
`pytest.py` in the repository cannot shadow it), drops PYTEST_ADDOPTS / PYTEST_PLUGINS, turns
off plugin autoloading, and registers an in-memory plugin that

- snapshots pytest's, pluggy's, unittest's and the builtins' functions and classes before any
  repository code is imported, and flags any that were replaced later (monkeypatching pytest
  from the source under test);
- records each test's phases from `call.excinfo` (not from the report object, which hooks
  can rewrite), and wraps every Python test function so that a pass needs the test body to
  have really been entered and to have returned;
- writes its own report, signed with an HMAC key that lives only in that process's memory.

A test passes only when that report, pytest's JUnit XML report and the exit status (0) all
agree. Skipped, xfailed, xpassed, errored, deselected and never-run tests are not passes; a
missing, unsigned or unparseable report is a fail; zero tests is a fail; a timeout is a fail.

What this does not guarantee: code under test runs in the same process as pytest, so a
program written specifically against this runner (walking the garbage collector to find the
plugin's key, or registering its own pluggy hook wrappers around ours) can still forge a
pass. The defence against that is upstream: the agent's changes to test files, conftest.py,
pytest configuration and anything that shadows a module are never carried into the check
(`tasks.is_test_path`), and the check runs on a fresh copy in a sandbox no agent has used.
Nor can a check catch a fix that games weak tests (e.g. returning an object equal to everything).

In a forking sandbox (`PythonForker`: the rollouts' local check sandboxes) the launcher's
prelude runs once, in a long-lived interpreter that never sees repository code, and each
check is a fork of it that calls `_check_main` with its own key: same plugin, same verdict,
without starting Python and importing pytest each time (sandbox.forking says what that
interpreter guarantees). Commands a fork cannot reproduce (interpreter flags, PYTHON*
variables but PYTHONPATH) start a fresh interpreter as before.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shlex
import shutil
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from fixrl.sandbox.base import SandboxError
from fixrl.sandbox.forking import ZygoteDied
from fixrl.tasks.loader import field_text
from fixrl.tasks.pytest_command import PytestCommand, parse_pytest_command

if TYPE_CHECKING:
    from fixrl.sandbox.base import ExecResult, Sandbox
    from fixrl.tasks.schema import Task

ANSWER_FILE = "/tmp/fixrl_answer.txt"
ANSWER_ENV = "FIXRL_ANSWER"
MAX_ANSWER_CHARS = 100_000

Outcome = Literal["pass", "fail", "error"]


@dataclass
class CheckResult:
    outcome: Outcome
    """pass: exit 0 and every named test passed; fail: anything else the code did; error: the
    sandbox itself failed (never a verdict on the code: callers retry or leave it out)."""
    tests: dict[str, str] = field(default_factory=dict)
    """Test node id -> passed | failed | error | skipped | xfailed | xpassed | missing | tampered,
    for every test the check names plus every other test it saw run (partial credit)."""
    exit_code: int | None = None
    output: str = ""
    """The check command's output (capped by the sandbox)."""
    seconds: float = 0.0
    reason: str = ""
    """Why it did not pass, in one line ('' for a pass)."""
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def fraction_passed(self, names: list[str] | None = None) -> float:
        """Share of `names` (default: every test seen) that passed: a partial-credit reward."""
        names = list(self.tests) if names is None else names
        if not names:
            return 1.0 if self.passed else 0.0
        return sum(self.tests.get(n) == "passed" for n in names) / len(names)


# ---------------------------------------------------------------- JUnit XML

def junit_key(nodeid: str) -> tuple[str, str]:
    """(classname, name) as pytest's junitxml writes them for a node id (mangle_test_address)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def parse_junit(text: str) -> dict[tuple[str, str], str]:
    """(classname, name) -> passed | failed | error | skipped. Raises ValueError if unparseable."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"unparseable JUnit XML: {e}") from None
    out: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        tags = {child.tag for child in case}
        if "error" in tags:
            outcome = "error"
        elif "failure" in tags:
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"
        if out.get(key, "passed") != "passed":
            continue  # a second entry for the same test never upgrades a non-pass
        out[key] = outcome
    return out


# ---------------------------------------------------------------- the launcher + plugin

# The launcher is PRELUDE (imports pytest and defines the plugin, before any repository code
# can run) then `_check_main`. A fresh process runs it as a one-shot script that deletes
# itself (_LAUNCHER_HEAD); a forking check sandbox (sandbox.forking) runs PRELUDE once and
# calls `_check_main` in a fork per check, with that check's key and report path.
_LAUNCHER_HEAD = r'''
import os, sys
_KEY = bytearray.fromhex("@@KEY@@")  # zeroed once the report is signed
_REPORT = "@@REPORT@@"
_HERE = os.path.abspath(__file__)
_DIR = os.path.dirname(_HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _DIR]
try:
    os.unlink(_HERE)
except OSError:
    pass
'''

PRELUDE = r'''
import os, sys
if "_KEY" not in globals():  # a forking sandbox's interpreter: set per check by _check_main
    _KEY, _REPORT = bytearray(), ""


def _clean_env():
    for _k in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        os.environ.pop(_k, None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True


_clean_env()

import builtins, hashlib, hmac, importlib, json, math, operator, unittest, unittest.case
import pytest, _pytest, pluggy
from _pytest.config import default_plugins as _defaults
for _name in _defaults:
    try:
        importlib.import_module("_pytest." + _name)
    except Exception:
        pass
import _pytest.outcomes, _pytest.python, _pytest.runner, _pytest.reports
import _pytest._argcomplete, faulthandler, pdb  # imported by every run anyway: before the fork

_open = builtins.open
_dumps = json.dumps
_hmac_new = hmac.new
_sha256 = hashlib.sha256
_WATCH_ROOTS = ("_pytest", "pytest", "pluggy", "unittest", "iniconfig")
_WATCH_EXACT = ("builtins", "math", "operator")
_PYTEST_ROOTS = ("_pytest", "pytest", "pluggy")
_Skipped = _pytest.outcomes.Skipped
_XFailed = _pytest.outcomes.XFailed
_Function = _pytest.python.Function
_FUNCTION_RUNTEST = _Function.__dict__["runtest"]
_isinstance, _issubclass, _type, _id, _getattr, _hasattr = isinstance, issubclass, type, id, getattr, hasattr
_is, _getitem = operator.is_, operator.getitem
_SKIP_ATTRS = {"__dict__", "__weakref__", "__doc__", "__annotations__", "__parameters__",
               "__abstractmethods__", "_abc_impl"}


def _watched():
    for name, mod in list(sys.modules.items()):
        if mod is None or not _hasattr(mod, "__dict__"):
            continue
        if name in _WATCH_EXACT or name.split(".")[0] in _WATCH_ROOTS:
            yield name, mod


def _is_code(val):
    return callable(val) or _isinstance(val, (property, classmethod, staticmethod))


def _snapshot():
    """Per namespace (a module's dict, a class's live __dict__ proxy): the names and objects of
    its functions, classes and descriptors, compared by identity later with C-level loops."""
    groups, seen = [], set()
    for name, mod in _watched():
        side = name.split(".")[0] in _PYTEST_ROOTS
        ns = vars(mod)
        keys = tuple(k for k, v in list(ns.items()) if callable(v) or _isinstance(v, _type))
        groups.append((ns, keys, tuple(map(ns.get, keys)), name, side, None))
        for val in list(ns.values()):
            if _isinstance(val, _type) and _getattr(val, "__module__", None) == name and _id(val) not in seen:
                seen.add(_id(val))
                proxy = val.__dict__
                keys = tuple(k for k, v in list(proxy.items()) if k not in _SKIP_ATTRS and _is_code(v))
                groups.append((proxy, keys, tuple(map(proxy.get, keys)), name + "." + val.__qualname__, side,
                               frozenset(proxy.keys())))
    return groups


def _fast(groups, pytest_only):
    """Flat tuples for a C-speed identity check of every watched name at once."""
    chosen = [g for g in groups if g[4] or not pytest_only]
    nss = tuple(g[0] for g in chosen for _ in g[1])
    keys = tuple(k for g in chosen for k in g[1])
    vals = tuple(v for g in chosen for v in g[2])
    proxies = tuple(g[0] for g in chosen if g[5] is not None)
    return nss, keys, vals, proxies, [len(g[5]) for g in chosen if g[5] is not None]


def _diff(snap, pytest_only):
    # pytest_only: the per-test check looks at pytest's and pluggy's own code only, because
    # tests legitimately monkeypatch builtins (input, open) in fixtures of any scope.
    groups, fast = snap
    nss, keys, vals, proxies, lens = fast[pytest_only]
    try:
        if all(map(_is, map(_getitem, nss, keys), vals)) and list(map(len, proxies)) == lens:
            return []
    except KeyError:
        pass
    bad = []
    for ns, keys, vals, label, side, keyset in groups:
        if pytest_only and not side:
            continue
        now = tuple(map(ns.get, keys))
        if not all(map(_is, now, vals)):
            bad += [label + "." + k for k, a, b in zip(keys, now, vals) if a is not b]
        if keyset is not None and len(ns) != len(keyset):
            bad += [label + "." + k + " (added)" for k in ns.keys() - keyset
                    if _is_code(ns[k]) or _hasattr(ns[k], "__get__")]
    return bad


_SNAP = []


class _Plugin:
    def __init__(self):
        self.items = {}
        self.order = []
        self.tamper = []
        self.collected = 0

    def _rec(self, nodeid):
        rec = self.items.get(nodeid)
        if rec is None:
            rec = self.items[nodeid] = {}
            self.order.append(nodeid)
        return rec

    @pytest.hookimpl
    def pytest_load_initial_conftests(self, early_config):
        # Between pytest's own early class patches (legacypath, tryfirst) and the first
        # conftest import (trylast): the last moment before repository code can run.
        if not _SNAP:
            groups = _snapshot()
            _SNAP.append((groups, {False: _fast(groups, False), True: _fast(groups, True)}))

    def _check(self, where, pytest_only=False):
        bad = _diff(_SNAP[0], pytest_only) if _SNAP else ["no snapshot of pytest was taken"]
        for b in bad:
            entry = b + " (" + where + ")"
            if entry not in self.tamper and len(self.tamper) < 50:
                self.tamper.append(entry)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.collected = len(session.items)
        self._check("after collection")

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        rec = self._rec(pyfuncitem.nodeid)
        original = pyfuncitem.obj
        state = rec["body"] = ["not entered"]

        def _body(*args, **kwargs):
            state[0] = "entered"
            try:
                result = original(*args, **kwargs)
            except BaseException:
                state[0] = "raised"
                raise
            state[0] = "returned"
            return result

        pyfuncitem.obj = _body
        try:
            outcome = yield
        finally:
            pyfuncitem.obj = original
        if outcome.excinfo is not None and state[0] == "returned":
            state[0] = "raised"

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rec = self._rec(item.nodeid)
        exc = call.excinfo
        if exc is None:
            kind = None
        elif _issubclass(exc.type, _Skipped):
            kind = "skipped"
        elif _issubclass(exc.type, _XFailed):
            kind = "xfailed"
        else:
            kind = "failed"
        try:
            rep = outcome.get_result()
            rep_outcome, wasxfail = rep.outcome, _hasattr(rep, "wasxfail")
        except BaseException:
            rep_outcome, wasxfail = "error", False
        rec[call.when] = (kind, rep_outcome, wasxfail)
        # Plain Python test functions run through pytest_pyfunc_call, so their body must have
        # been seen to return; unittest and doctest items have their own runtest.
        rec["needs_body"] = _isinstance(item, _Function) and _getattr(_type(item), "runtest", None) is _FUNCTION_RUNTEST
        if call.when == "teardown":  # after the test's fixtures have undone their patches
            self._check("after " + item.nodeid, pytest_only=True)

    def verdict(self, rec):
        setup, call, teardown = rec.get("setup"), rec.get("call"), rec.get("teardown")
        if setup is None:
            return "missing"
        if setup[0] == "skipped":
            return "xfailed" if setup[2] else "skipped"
        if setup[0] is not None or setup[1] != "passed":
            return "error"
        if call is None:
            return "missing"
        if call[2]:
            return "xfailed" if call[0] is not None else "xpassed"
        if call[0] == "skipped":
            return "skipped"
        if call[0] == "xfailed":
            return "xfailed"
        if call[0] is not None or call[1] != "passed":
            return "failed"
        if rec.get("needs_body") and rec.get("body", ["not entered"])[0] != "returned":
            return "tampered"
        if teardown is None or teardown[0] is not None or teardown[1] != "passed":
            return "error"
        return "passed"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self._check("at session end")
        tests = {nodeid: self.verdict(self.items[nodeid]) for nodeid in self.order}
        if self.tamper:
            tests = {k: ("tampered" if v == "passed" else v) for k, v in tests.items()}
        body = _dumps({"tests": tests, "collected": self.collected, "exitstatus": int(exitstatus),
                       "tamper": self.tamper}, sort_keys=True)
        mac = _hmac_new(bytes(_KEY), body.encode(), _sha256).hexdigest()
        # Nothing that runs after this point (exit handlers, threads) can sign another report.
        _KEY[:] = bytes(len(_KEY))
        with _open(_REPORT, "w") as f:
            f.write(_dumps({"body": body, "mac": mac}))


def _check_main(args, pythonpath=(), key=None, report=None):
    """Run pytest on the working directory; the exit status. A forked run passes its `key`
    and `report` path, and PYTHONPATH's entries (its interpreter started without them)."""
    global _KEY, _REPORT
    if key is not None:
        _KEY, _REPORT = bytearray.fromhex(key), report
    _clean_env()
    sys.path[0:0] = [os.getcwd(), *pythonpath]
    sys.argv[0] = pytest.__file__
    code = pytest.main(list(args), plugins=[_Plugin()])
    sys.stdout.flush()
    sys.stderr.flush()
    return int(code)


def _before_fork():
    """In a forking sandbox's interpreter, once: a whole check on a throwaway test (one pass,
    one failure) in a temporary directory, so that what pytest builds lazily on first use
    (imports, compiled patterns, inspect's module index) is built before the fork, not in
    every check (a third of a check's CPU time). No repository code runs: the directory is
    ours, and everything the session changed in this process is put back."""
    import shutil, tempfile
    path, meta_path, modules, argv = list(sys.path), list(sys.meta_path), set(sys.modules), list(sys.argv)
    cwd, environ, key, report = os.getcwd(), dict(os.environ), _KEY, _REPORT
    tmp = tempfile.mkdtemp(prefix="fixrl-warm-")
    try:
        os.mkdir(os.path.join(tmp, "t"))
        with open(os.path.join(tmp, "t", "test_fixrl_warm.py"), "w") as f:
            f.write("def test_pass():\n    assert [1] == [1]\n\n\ndef test_fail():\n    assert {1: 2} == {1: 3}\n")
        os.chdir(tmp)
        _check_main(["-q", "t/test_fixrl_warm.py", "-p", "no:cacheprovider", "--junitxml=" + tmp + "/j.xml"],
                    key=os.urandom(32).hex(), report=tmp + "/r.json")
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
        sys.path[:], sys.meta_path[:], sys.argv[:] = path, meta_path, argv
        for name in set(sys.modules) - modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(tmp):
                del sys.modules[name]
        os.environ.clear()
        os.environ.update(environ)
        globals().update(_KEY=key, _REPORT=report)
        _SNAP.clear()  # each check takes its own snapshot
'''

# os._exit, not sys.exit: exit handlers registered by the code under test never run.
_LAUNCHER_MAIN = "os._exit(_check_main(@@ARGS@@))\n"


def _launcher_source(key: bytes, report: str, args: list[str]) -> str:
    return (_LAUNCHER_HEAD.replace("@@KEY@@", key.hex()).replace("@@REPORT@@", report)
            + PRELUDE + _LAUNCHER_MAIN.replace("@@ARGS@@", repr(list(args))))


def read_plugin_report(text: str, key: bytes) -> dict:
    """The plugin's signed report; ValueError if missing fields, unsigned or forged."""
    outer = json.loads(text)
    body, mac = outer["body"], outer["mac"]
    want = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, str(mac)):
        raise ValueError("report signature does not match (forged or corrupted)")
    report = json.loads(body)
    if not isinstance(report.get("tests"), dict):
        raise ValueError("report has no tests")
    return report


# ---------------------------------------------------------------- the runner

def _tail(text: str, n: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def _answer_text(answer: str | None) -> str:
    return (answer or "").replace("\x00", "")[:MAX_ANSWER_CHARS]


def clear_check_paths(task: Task, root: Path) -> None:
    """On a host directory about to be judged: remove whatever sits at the hidden check files'
    paths, and a symlink or file where one of their parent directories should be (what
    `run_check` otherwise does inside the sandbox, one command more per check). Never follows
    a link."""

    rels = [PurePosixPath(d) for d in task.check.files]
    if any(r.is_absolute() or ".." in r.parts for r in rels):  # the schema refuses these
        raise ValueError(f"check file paths must be inside the repository: {sorted(map(str, rels))}")
    parents = sorted({PurePosixPath(*r.parts[:i]) for r in rels for i in range(1, len(r.parts))},
                     key=lambda p: len(p.parts))
    for rel in parents:  # shallow first: a link high up goes before anything under it is looked at
        target = Path(root, *rel.parts)
        if target.is_symlink() or (os.path.lexists(target) and not target.is_dir()):
            target.unlink()
    for rel in rels:
        target = Path(root, *rel.parts)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()


def _write_check_files(task: Task, sb: Sandbox, paths_cleared: bool = False) -> None:
    if not task.check.files:
        return

    if not paths_cleared:
        # Whatever sits at those paths (a file the agent made, a symlink, a directory) goes first,
        # and so does a symlink or a file standing where one of their parent directories should be.
        parents = sorted({str(PurePosixPath(*PurePosixPath(d).parts[:i]))
                          for d in task.check.files for i in range(1, len(PurePosixPath(d).parts))},
                         key=lambda p: p.count("/"))
        script = [f"if [ -L {shlex.quote(p)} ] || {{ [ -e {shlex.quote(p)} ] && [ ! -d {shlex.quote(p)} ]; }}; "
                  f"then rm -rf -- {shlex.quote(p)}; fi" for p in parents]
        script.append("rm -rf -- " + " ".join(shlex.quote(p) for p in task.check.files))
        sb.exec("; ".join(script), timeout=30)
    for dest, content in task.check.files.items():
        sb.write_file(dest, field_text(task, content))


def run_check(task: Task, sb: Sandbox, answer: str | None = None, *,
              paths_cleared: bool = False) -> CheckResult:
    """Judge the repository state in `sb`'s WORKDIR with the task's hidden check.

    The caller has already put the state to judge (and run `tasks.run_setup`) in `sb`; the
    hidden check files are written here, just before the command runs. A SandboxError becomes
    outcome "error" (retry on a fresh sandbox); everything the code does is pass or fail.
    paths_cleared: the caller loaded `sb` from a directory it passed to `clear_check_paths`
    (and ran no setup since), so nothing needs removing first.
    """

    start = time.monotonic()
    try:
        result = _run_check(task, sb, answer, paths_cleared)
    except SandboxError as e:
        result = CheckResult("error", output=str(e), reason=f"sandbox error: {e}")
    result.seconds = time.monotonic() - start
    return result


def _run_check(task: Task, sb: Sandbox, answer: str | None, paths_cleared: bool) -> CheckResult:
    check = task.check
    env_prefix = ""
    if answer is not None or task.kind == "question":
        text = _answer_text(answer)
        sb.write_file(ANSWER_FILE, text)
        env_prefix = f"export {ANSWER_ENV}={shlex.quote(text)}; "  # reaches every command of a compound one
    try:
        _write_check_files(task, sb, paths_cleared)
    except (OSError, ValueError) as e:  # e.g. a path the workspace made unwritable
        return CheckResult("fail", tests={t: "missing" for t in check.tests},
                           reason=f"could not write the check files: {e}")

    parsed = parse_pytest_command(check.command)
    if parsed is None:
        res = sb.exec(env_prefix + check.command, timeout=check.timeout)
        if res.timed_out:
            return CheckResult("fail", exit_code=res.exit_code, output=res.output, timed_out=True,
                               reason=f"check timed out after {check.timeout:g}s")
        if res.exit_code != 0:
            return CheckResult("fail", exit_code=res.exit_code, output=res.output,
                               reason=f"check command exited with status {res.exit_code}: {_tail(res.output, 200)}")
        return CheckResult("pass", exit_code=0, output=res.output)

    if isinstance(sb, PythonForker) and sb.forking:
        fork_env = _fork_env(parsed, answer)
        if fork_env is not None:
            return _run_forked(task, sb, parsed, fork_env)

    tmpdir = f"/tmp/fixrl-check-{secrets.token_hex(8)}"
    key = secrets.token_bytes(32)
    report_path = f"{tmpdir}/{secrets.token_hex(8)}.json"
    junit_path = f"{tmpdir}/{secrets.token_hex(8)}.xml"
    launcher = f"{tmpdir}/{secrets.token_hex(8)}.py"
    args = _pytest_args(parsed, junit_path)
    sb.exec(f"mkdir -p -m 700 {tmpdir}", timeout=30)
    sb.write_file(launcher, _launcher_source(key, report_path, args))
    cmd = " ".join([*(shlex.quote(e) for e in parsed.env), shlex.quote(parsed.python),
                    *(shlex.quote(f) for f in parsed.python_flags), shlex.quote(launcher)])
    try:
        res = sb.exec(env_prefix + cmd, timeout=check.timeout)
        return _verdict(task, sb, res, key, report_path, junit_path)
    finally:
        try:
            sb.exec(f"rm -rf {tmpdir}", timeout=30)
        except Exception:  # noqa: BLE001 - cleanup of a dying sandbox must not mask the verdict
            pass


@runtime_checkable
class PythonForker(Protocol):
    """A sandbox that can run a function in a fork of an interpreter that has already run a
    prelude (sandbox.forking.ForkingSandbox): a check then skips starting Python and
    importing pytest."""

    forking: bool

    def fork_python(self, prelude: str, entry: str, kwargs: dict, *, env: dict[str, str] | None = None,
                    timeout: float = 60.0) -> ExecResult: ...


_FORK_PYTHONS = ("python", "python3")
_FORK_SAFE_ENV = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")


def _fork_env(parsed: PytestCommand, answer: str | None) -> dict[str, str] | None:
    """The environment a forked run of `parsed` gets, or None when a fork cannot run it as
    a new interpreter would: interpreter flags, another interpreter, PYTHON* variables that
    only a starting interpreter reads."""
    if parsed.python not in _FORK_PYTHONS or parsed.python_flags:
        return None
    env = dict(e.split("=", 1) for e in parsed.env)
    if any(k.startswith("PYTHON") and k not in _FORK_SAFE_ENV for k in env):
        return None
    if answer is not None:
        env[ANSWER_ENV] = _answer_text(answer)
    return env


def _run_forked(task: Task, sb: PythonForker, parsed: PytestCommand, env: dict[str, str]) -> CheckResult:
    check = task.check
    key = secrets.token_bytes(32)
    # The forking sandbox's /tmp is cleared before its next use: no directory to remove.
    report_path = f"/tmp/.fixrl-{secrets.token_hex(8)}.json"
    junit_path = f"/tmp/.fixrl-{secrets.token_hex(8)}.xml"
    args = _pytest_args(parsed, junit_path)
    pythonpath = [p for p in env.get("PYTHONPATH", "").split(":") if p]
    try:
        res = sb.fork_python(PRELUDE, "_check_main",
                             {"args": args, "pythonpath": pythonpath, "key": key.hex(), "report": report_path},
                             env=env, timeout=check.timeout)
    except ZygoteDied as e:
        # Only the code under test runs beside the interpreter: it killed or stopped it.
        return CheckResult("fail", tests={t: "missing" for t in check.tests},
                           reason=f"the check's interpreter was killed or stopped during the run: {e}")
    return _verdict(task, sb, res, key, report_path, junit_path)


def _pytest_args(parsed: PytestCommand, junit_path: str) -> list[str]:
    """The check's own pytest arguments plus ours: no cache, no repository addopts, the
    repository as rootdir, a JUnit report to cross-check the plugin's."""
    return list(parsed.args) + ["-p", "no:cacheprovider", "-o", "addopts=", "--rootdir=.",
                                f"--junitxml={junit_path}"]


def _read(sb: Sandbox, path: str) -> str | None:
    try:
        return sb.read_file(path)
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError):
        return None


def _verdict(task: Task, sb: Sandbox, res, key: bytes, report_path: str, junit_path: str) -> CheckResult:
    named = list(task.check.tests)
    if res.timed_out:
        return CheckResult("fail", tests={t: "missing" for t in named}, exit_code=res.exit_code,
                           output=res.output, timed_out=True, reason=f"check timed out after {task.check.timeout:g}s")

    def fail(reason: str, tests: dict[str, str] | None = None) -> CheckResult:
        return CheckResult("fail", tests=tests if tests is not None else {t: "missing" for t in named},
                           exit_code=res.exit_code, output=res.output, reason=reason)

    raw = _read(sb, report_path)
    if raw is None:
        return fail(f"no test report: pytest did not finish normally (exit status {res.exit_code}): "
                    f"{_tail(res.output, 200)}")
    try:
        report = read_plugin_report(raw, key)
    except (ValueError, KeyError, TypeError) as e:
        return fail(f"invalid test report: {e}")
    junit_raw = _read(sb, junit_path)
    if junit_raw is None:
        return fail("no JUnit report: pytest did not finish normally")
    try:
        junit = parse_junit(junit_raw)
    except ValueError as e:
        return fail(str(e))

    tests: dict[str, str] = {}
    for nodeid, outcome in report["tests"].items():
        jo = junit.get(junit_key(nodeid), "missing")
        if outcome == "passed" and jo != "passed":
            outcome = "failed" if jo == "missing" else jo
        tests[nodeid] = outcome
    for t in named:
        tests.setdefault(t, "missing")

    if report.get("tamper"):
        return fail("the test machinery (pytest, unittest or builtins) was modified during the run: "
                    f"{', '.join(report['tamper'][:3])}", tests)
    required = named or list(tests)
    if not required:
        return fail("no tests ran (zero collected)", tests)
    not_passed = [t for t in required if tests.get(t) != "passed"]
    if not_passed:
        shown = ", ".join(f"{t} {tests.get(t, 'missing')}" for t in not_passed[:3])
        more = f" (+{len(not_passed) - 3} more)" if len(not_passed) > 3 else ""
        return fail(f"{len(not_passed)}/{len(required)} check tests did not pass: {shown}{more}", tests)
    if res.exit_code != 0 or report.get("exitstatus") != 0:
        return fail(f"pytest exited with status {res.exit_code} (session status {report.get('exitstatus')})", tests)
    return CheckResult("pass", tests=tests, exit_code=0, output=res.output)
