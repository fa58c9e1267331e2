"""The check's pytest plugin: pytest's progress as events for the supervisor."""
from __future__ import annotations

import functools
import sys

import _pytest
import _pytest.outcomes
import _pytest.python
import pytest

_Skipped = _pytest.outcomes.Skipped
_XFailed = _pytest.outcomes.XFailed
_Function = _pytest.python.Function
_FUNCTION_RUNTEST = _Function.__dict__["runtest"]


class _Plugin:
    """Sends pytest's progress to the supervisor through `emit` (the guard's emitter; None in
    a warm-up run, which reports nothing). Outcomes come from `call.excinfo`, not from the
    report object, which hooks can rewrite."""

    def __init__(self):
        self.emit = None
        self.items = {}
        self.bodies = {}

    def _send(self, event):
        if self.emit is not None:
            return self.emit(event)
        return None

    def bracketed(self, configure):
        """An environment plugin's `pytest_configure` between two requests to the guard, so
        that what it changes in pytest's machinery (pytest-subtests replaces
        `TestCaseFunction.addSkip`) is the snapshot's from then on. It runs after the conftests
        were imported: what changed before it stays a change."""

        @functools.wraps(configure)
        def pytest_configure(*args):
            self._send({"op": "mark"})
            try:
                return configure(*args)
            finally:
                self._send({"op": "adopt"})

        return pytest_configure

    @pytest.hookimpl
    def pytest_load_initial_conftests(self, early_config):
        # After pytest's own early class patches, before the first conftest is imported: the
        # last moment before repository code can run.
        self._send({"op": "snapshot"})
        self._send({"op": "seal"})

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        debugging = sys.modules.get("_pytest.debugging")
        if debugging is not None:  # the debugger's class-level references to the configuration
            debugging.pytestPDB._config = debugging.pytestPDB._pluginmanager = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        ids = [item.nodeid for item in session.items]
        chunk, size = [], 0
        for nodeid in ids:  # events stay well under a pipe's atomic write size
            if chunk and size + len(nodeid) > 3000:
                self._send({"e": "collected", "ids": chunk})
                chunk, size = [], 0
            chunk.append(nodeid)
            size += len(nodeid) + 4
        self._send({"e": "collected", "ids": chunk})
        for item in session.items:
            obj = getattr(item, "obj", None) if isinstance(item, _Function) else None
            params = dict(getattr(getattr(item, "callspec", None), "params", {}) or {})
            self.items[item.nodeid] = (obj, getattr(obj, "__code__", None), params)
        self._send({"op": "verify", "files": sorted({str(item.path) for item in session.items
                                                     if isinstance(item, _Function)})})
        self._send({"op": "check", "where": "after collection"})
        self._send({"op": "purge"})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        util = sys.modules.get("_pytest.assertion.util")
        if util is not None:  # set by pytest for each test; they lead to its configuration
            util._config = util._reprcompare = util._assertion_pass = None

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        original = pyfuncitem.obj
        state = self.bodies[pyfuncitem.nodeid] = ["not entered"]
        recorded = self.items.get(pyfuncitem.nodeid)
        params = dict(getattr(getattr(pyfuncitem, "callspec", None), "params", {}) or {})
        if recorded is None or recorded[0] is not original or getattr(original, "__code__", None) is not recorded[1] \
                or params.keys() != recorded[2].keys() or any(params[k] is not recorded[2][k] for k in params):
            state[0] = "changed after collection"

        def _body(*args, **kwargs):
            if state[0] == "not entered":
                state[0] = "entered"
            result = original(*args, **kwargs)
            if state[0] == "entered":
                state[0] = "returned"
            return result

        pyfuncitem.obj = _body
        try:
            yield
        finally:
            pyfuncitem.obj = original

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        exc = call.excinfo
        if exc is None:
            kind = None
        elif issubclass(exc.type, _Skipped):
            kind = "skipped"
        elif issubclass(exc.type, _XFailed):
            kind = "xfailed"
        else:
            kind = "failed"
        try:
            rep = outcome.get_result()
            rep_outcome, wasxfail = rep.outcome, hasattr(rep, "wasxfail")
        except BaseException:  # noqa: BLE001 - a report that cannot be made is an error
            rep_outcome, wasxfail = "error", False
        event = {"e": "phase", "id": item.nodeid, "when": call.when, "kind": kind, "rep": rep_outcome,
                 "wasxfail": wasxfail}
        if call.when == "call":
            # Plain Python test functions run through pytest_pyfunc_call, so their body must
            # have been seen to return; unittest and doctest items have their own runtest.
            event["needs_body"] = isinstance(item, _Function) and getattr(type(item), "runtest", None) \
                is _FUNCTION_RUNTEST
            event["body"] = self.bodies.get(item.nodeid, ["not entered"])[0]
        self._send(event)
        self._send({"op": "purge"})  # pytest read the test's source to report it

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self._send({"op": "check", "where": "at session end"})
        self._send({"e": "finish", "exitstatus": int(exitstatus)})
