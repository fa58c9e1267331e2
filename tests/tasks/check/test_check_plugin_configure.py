"""An environment's pytest plugin that changes pytest's machinery when pytest configures it.
pytest-subtests 0.15 (configargparse's `test` extra) replaces `TestCaseFunction.addSkip` and
adds `addSubTest` in its `pytest_configure`, which runs after the guard's snapshot (taken
before the first conftest is imported): every configargparse task was "the test machinery was
modified" with the reference fix on Docker, a false 0 for any fix. The runner now brackets each
environment plugin's `pytest_configure` with two requests, and what it changes becomes the
snapshot's; a change made before it (by code a conftest imported) stays a change. A tiny plugin
wheel doing what pytest-subtests does is installed into a real environment; real sandboxes.
Fails before the fix: `test_a_plugin_that_patches_pytest_at_configure_is_no_tampering`."""
from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest
from suitekit import fix_task, write_repo, write_wheel

from fixrl.sandbox import SandboxPool
from fixrl.sandbox.environment import EnvSpec, build_environment
from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

PLUGIN = textwrap.dedent("""\
    from _pytest.unittest import TestCaseFunction


    def _addSkip(self, testcase, reason):
        self._originaladdSkip(testcase, reason)


    def pytest_configure(config):
        TestCaseFunction._originaladdSkip = TestCaseFunction.addSkip
        TestCaseFunction.addSkip = _addSkip
        TestCaseFunction.failfast = False


    def pytest_unconfigure():
        TestCaseFunction.addSkip = TestCaseFunction._originaladdSkip
        del TestCaseFunction._originaladdSkip, TestCaseFunction.failfast
""")

HIDDEN = textwrap.dedent("""\
    import unittest

    from calc import add


    class TestAdd(unittest.TestCase):
        def test_add(self):
            self.assertEqual(add(1, 2), 3)

        @unittest.skip("shown as a skip by the plugin's addSkip")
        def test_skipped(self):
            raise AssertionError
""")
TESTS = ["tests/test_hidden.py::TestAdd::test_add"]
FIXED = "def add(a, b):\n    return a + b\n"
# changed code imported by a conftest, before any plugin is configured
PATCHES = FIXED + textwrap.dedent("""\


    from _pytest.unittest import TestCaseFunction

    TestCaseFunction.addFailure = TestCaseFunction.addSuccess
""")


@pytest.fixture(scope="module")
def env_tag():
    # the environment's tag hashes the spec (the wheel's path): a new source, a new path
    digest = hashlib.sha256(PLUGIN.encode()).hexdigest()[:12]
    wheel = Path.home() / ".cache" / "fixrl" / "test-wheels" / digest / "fixrl_patching_plugin-1.0-py3-none-any.whl"
    return build_environment(EnvSpec(packages=(str(write_wheel(wheel, "fixrl_patching_plugin", PLUGIN,
                                                                "patching")),)), "local")


def judge(env_tag, tmp_path, forking, calc):
    ws = write_repo(tmp_path / "ws", {"calc.py": calc, "conftest.py": "import calc  # noqa: F401\n"})
    check = {"timeout": 60, "files": {"tests/test_hidden.py": HIDDEN}, "tests": TESTS}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with SandboxPool(1, backend="local", image=env_tag, forking=forking) as pool, pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": ("def add(a, b):\n    return a - b\n", None)}))


@pytest.mark.parametrize("forking", [False, True], ids=["fresh", "forking"])
def test_a_plugin_that_patches_pytest_at_configure_is_no_tampering(env_tag, tmp_path, forking):
    r = judge(env_tag, tmp_path, forking, FIXED)
    assert r.outcome == "pass", (r.reason, r.output[-3000:])


@pytest.mark.parametrize("forking", [False, True], ids=["fresh", "forking"])
def test_a_patch_made_before_the_plugin_configures_stays_tampering(env_tag, tmp_path, forking):
    r = judge(env_tag, tmp_path, forking, PATCHES)
    assert r.outcome == "fail" and "addFailure" in r.reason, (r.reason, r.output[-3000:])
