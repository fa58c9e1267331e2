"""The reward: hidden check on a fresh copy, three outcomes, retries, partial credit, reward
sources, and the episode info (first edit right, reads before it, dropped files)."""
from __future__ import annotations

import contextlib

import pytest
from envkit import HIDDEN_IDS

from fixrl.envs import ToolCall
from fixrl.tasks.check.carry import bad_new_file, suspicious


def call(env, name, **args):
    return env.step(ToolCall(name, args)).observation


FIX = dict(path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")


def test_pass_with_full_info(make_env):
    env = make_env()
    env.reset()
    call(env, "read", path="pkg/core.py")
    call(env, "read", path="pkg/report.py")
    call(env, "edit", **FIX)
    call(env, "test")
    call(env, "submit")
    reward, info = env.finish()
    assert reward == 1.0
    assert (info.outcome, info.hidden_pass, info.exit_status, info.submitted) == ("pass", True, "submitted", True)
    assert info.check_tests == {f"tests/test_hidden.py::{t}": "passed" for t in HIDDEN_IDS}
    assert info.partial_credit == 1.0
    assert (info.reads, info.tests, info.edits, info.turns) == (2, 1, 1, 5)
    assert info.reads_before_first_edit == 2 and info.first_edit_right is True
    assert info.public_pass is True  # the last test run came after the last edit
    assert info.actions == ["read pkg/core.py", "read pkg/report.py", "edit pkg/core.py", "test", "submit"]
    assert info.seconds["check"] > 0 and info.seconds["tools"] > 0
    assert info.error is None and info.dropped_files == {}


def test_fail_keeps_per_test_results_and_partial_credit(make_env):
    env = make_env(reward=lambda info: info.partial_credit)
    env.reset()
    call(env, "submit")
    reward, info = env.finish()
    assert info.outcome == "fail" and info.hidden_pass is False
    assert info.check_tests["tests/test_hidden.py::test_clamp_above"] == "failed"
    assert info.check_tests["tests/test_hidden.py::test_scale_hidden"] == "passed"
    assert info.partial_credit == pytest.approx(2 / 6)
    assert reward == pytest.approx(2 / 6)  # a user reward function of the info
    assert info.first_edit_right is None and info.public_pass is None


def test_first_edit_right_judges_the_first_applied_edit(make_env):
    env = make_env()
    env.reset()
    call(env, "edit", path="pkg/core.py", old="max(lo, max", new="min(lo, max")  # wrong site
    call(env, "edit", path="pkg/core.py", old="min(lo, max(x, hi))", new="max(lo, min(x, hi))")
    reward, info = env.finish()
    assert reward == 1.0 and info.first_edit_right is False and info.exit_status == "out_of_turns"

    env = make_env()
    env.reset()
    call(env, "read", path="pkg/core.py")
    # not the reference text, but the same function once parsed: counts as the reference fix
    call(env, "edit", path="pkg/core.py", old="max(lo, max(x, hi))", new="max(lo,  min(x , hi))  # fixed")
    reward, info = env.finish()
    assert reward == 1.0 and info.first_edit_right is True and info.reads_before_first_edit == 1


def test_public_reward_is_hackable_hidden_is_not(make_env):
    """reward='public' exists to study hacking: editing the public tests earns it. Under the
    hidden reward the same edits are refused at `edit` (the check would never see them)."""
    for source in ("public", "hidden"):
        env = make_env(reward=source, public_check=True)
        env.reset()
        first = call(env, "edit", path="tests/test_public.py", old="    assert clamp(5, 0, 10) == 5\n",
                     new="    pass\n")
        call(env, "edit", path="tests/test_public.py", old="    assert bounded_total([-5, 5, 50], 0, 10) == 15\n",
             new="    pass\n")
        call(env, "submit")
        reward, info = env.finish()
        assert info.hidden_pass is False
        if source == "public":
            assert reward == 1.0 and info.public_pass is True
            assert info.dropped_files == {"tests/test_public.py": "a test or test-configuration file"}
        else:
            assert first.startswith("Edit refused") and "tests/test_public.py is a test" in first, first
            assert reward == 0.0 and info.public_pass is False and info.rule_refusals == 2
            assert info.dropped_files == {}


def test_question_answers(make_env):
    for answer, expected in (("10", 1.0), (" 10\n", 1.0), ("15", 0.0), (None, 0.0)):
        env = make_env("clamp-question")
        env.reset()
        call(env, "submit", **({} if answer is None else {"answer": answer}))
        reward, info = env.finish()
        assert reward == expected, answer
        assert info.answer == answer and info.first_edit_right is None


def test_dropped_files_rules():
    assert bad_new_file("pkg/helpers.py") is None
    for path in ("sitecustomize.py", "pkg/json.py", "pytest.py", "pkg/__pycache__/core.cpython-311.pyc",
                 "x.pth", "notes.txt", "pluggy/__init__.py", ".hidden.py", "my-mod.py"):
        assert bad_new_file(path), path
    assert suspicious("x = 1\n", "x = 2\n") is None
    assert "test runner" in suspicious("", "import _pytest.runner\n")
    assert suspicious("", "import _pytest.runner\n", allowed="import _pytest\n") is None
    assert "test runner" in suspicious("import _pytest\n", "import _pytest\nimport _pytest.runner\n")  # always
    assert "heap" in suspicious("", "import gc\ngc.get_objects()\n")
    # what the code reaches is the edit rules' (AST, allow-list): honest text is not dropped by words
    for honest in ("def f(p):\n    return open(p).read()\n", "if __name__ == '__main__':\n    print(1)\n",
                   "def f(o):\n    return o.signal.exit()\n", "URL = 'http://example.org'\n"):
        assert suspicious("def f(p):\n    return p\n", honest) is None, honest


def test_new_and_shadowing_files_are_not_carried(make_env):
    env = make_env()
    env.reset()
    call(env, "edit", **FIX)
    env.sb.write_file("pkg/helpers.py", "def helper():\n    return 1\n")
    env.sb.write_file("sitecustomize.py", "import sys\n")
    env.sb.write_file("pkg/json.py", "x = 1\n")
    env.sb.write_file("pkg/__pycache__/core.cpython-311.pyc", "junk")
    pyc = "pkg/__pycache__/core.cpython-311.pyc"
    reported = env.sb.changed_files()
    reward, info = env.finish()
    assert reward == 1.0
    assert set(info.dropped_files) - {pyc} == {"sitecustomize.py", "pkg/json.py"}
    assert pyc in info.dropped_files or pyc not in reported  # the sandbox may not even report caches


class _KilledMidCheck:
    """A real local sandbox that dies when the check command starts: it is closed (its processes
    killed, its directory removed) and the call raises SandboxError, as a container killed under
    a running exec does. (Docker: tests/envs/test_env_docker.py kills a real container.)"""

    def __init__(self, sb):
        self._sb = sb

    def __getattr__(self, name):
        return getattr(self._sb, name)

    def exec(self, cmd, timeout=60.0):
        from fixrl.sandbox.base import SandboxError

        if "python" in cmd:
            self._sb.close()
            raise SandboxError("sandbox killed while the check was running")
        return self._sb.exec(cmd, timeout)


@contextlib.contextmanager
def _dying_sandbox(ws, kill: bool):
    from fixrl.sandbox import open_sandbox

    with open_sandbox(ws) as sb:
        yield _KilledMidCheck(sb) if kill else sb


def test_sandbox_killed_mid_check_is_error_not_fail(make_env):
    opened = []

    def always_dies(ws):
        opened.append(ws)
        return _dying_sandbox(ws, kill=True)

    env = make_env(check_sandbox=always_dies, check_retries=1)
    env.reset()
    call(env, "edit", **FIX)
    call(env, "submit")
    reward, info = env.finish()
    assert (reward, info.outcome, info.hidden_pass) == (0.0, "error", None)
    assert info.exit_status == "submitted" and "check" in info.error
    assert len(opened) == 2  # one retry, each on a fresh copy

    def dies_once(ws):
        opened.append(ws)
        return _dying_sandbox(ws, kill=len(opened) == 1)

    opened.clear()
    env = make_env(check_sandbox=dies_once, check_retries=2)
    env.reset()
    call(env, "edit", **FIX)
    call(env, "submit")
    reward, info = env.finish()
    assert (reward, info.outcome, len(opened)) == (1.0, "pass", 2)


def test_setup_runs_before_the_episode_and_before_the_check(make_env, mini_suite):
    from fixrl.envs import EnvConfig, episode_env

    # setup writes a module the code needs; the hidden check only passes if setup ran there too
    task = mini_suite.get("clamp-minmax").model_copy(update={
        "setup": ["printf 'LIMIT = 10\\n' > pkg/settings.py",
                  "printf 'from pkg.settings import LIMIT\\n' >> pkg/core.py"],
    })
    with episode_env(task, EnvConfig(), mini_suite) as env:
        env.reset()
        assert "LIMIT = 10" in call(env, "read", path="pkg/settings.py")
        call(env, "edit", **FIX)
        reward, info = env.finish()
        assert reward == 1.0 and info.dropped_files == {}  # setup's file is not the agent's change
    bad = task.model_copy(update={"setup": ["exit 3"]})
    with episode_env(bad, EnvConfig(), mini_suite) as env:
        env.reset()
        assert env.done and env.info.exit_status == "error" and "setup" in env.info.error
        reward, info = env.finish()
        assert (reward, info.outcome) == (0.0, "error")
