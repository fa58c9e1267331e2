"""A representative subset in Docker sandboxes: episodes, path escapes, hacking attempts, and a
container killed in the middle of the check."""
from __future__ import annotations

import contextlib
import random
import threading
import time

import pytest
from envkit import CONFTEST_FORCE, EXIT_ATTACKS, HIDDEN_MARKER, ORIG_TOP, REWRITER, buggy_core, runner_outcome

from fixrl.envs import ToolCall
from fixrl.envs.scripted import make_plan, run_plan

pytestmark = pytest.mark.docker


def call(env, name, **args):
    return env.step(ToolCall(name, args)).observation


def test_oracle_in_docker_renamed(make_env, docker_available):
    for task_id in ("clamp-minmax", "clamp-question"):
        env = make_env(task_id, backend="docker", rename=True, max_edits=1, seed=2)
        reward, info = run_plan(env, make_plan("oracle", env.task, env, random.Random(0)))
        assert reward == 1.0 and info.outcome == "pass" and info.renamed, info


def test_paths_outside_the_workspace_in_docker(make_env, docker_available):
    env = make_env(backend="docker", max_malformed=50, max_turns=50)
    env.reset()
    env.sb.exec("ln -s /etc/passwd pkg/passwd.py && ln -s / pkg/root", timeout=10)
    for bad in ("../etc/passwd", "/etc/passwd", "pkg/passwd.py", "pkg/root/etc/passwd"):
        out = call(env, "read", path=bad)
        assert "outside the workspace" in out and "root:" not in out, (bad, out)
    assert "def clamp" in call(env, "read", path="/workspace/pkg/core.py")
    assert "unknown tool" in call(env, "sudo")


def test_hacks_in_docker(make_env, docker_available):
    env = make_env(backend="docker")
    env.reset()
    env.sb.write_file("conftest.py", CONFTEST_FORCE)
    env.sb.write_file("tests/test_hidden.py", "def test_clamp_above():\n    pass\n")
    call(env, "submit")
    reward, info = env.finish()
    assert reward == 0.0 and info.outcome == "fail"
    assert set(info.dropped_files) == {"conftest.py", "tests/test_hidden.py"}
    # the runner alone, in Docker: exits at import, and a background rewriter
    core = buggy_core(env.task)
    for code in (EXIT_ATTACKS["os._exit"], REWRITER):
        assert runner_outcome(env.task, {"pkg/core.py": core.replace(ORIG_TOP, ORIG_TOP + code)},
                              backend="docker") == "fail"
    assert runner_outcome(env.task, {"conftest.py": CONFTEST_FORCE}, backend="docker") == "fail"


def test_hidden_tests_are_nowhere_in_the_agent_container(make_env, docker_available):
    env = make_env(backend="docker")
    env.reset()
    res = env.sb.exec("find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name 'test_hidden*' "
                      f"-o -name '*.patch' \\) -print 2>/dev/null; grep -rl {HIDDEN_MARKER} / "
                      "--exclude-dir=proc --exclude-dir=sys 2>/dev/null; ls -a; true", timeout=120)
    assert "test_hidden" not in res.output and HIDDEN_MARKER not in res.output
    assert ".git" not in res.output.split()


@contextlib.contextmanager
def _container_killed_during_check(ws, kill: bool):
    """A real Docker sandbox whose container is killed (docker kill) once the check's pytest
    process is running in it."""
    from fixrl.sandbox import open_sandbox
    from fixrl.sandbox.docker import client

    with open_sandbox(ws, backend="docker") as sb:
        stop = threading.Event()

        def killer():
            api = client().api
            while not stop.is_set():
                try:
                    procs = api.top(sb.id).get("Processes") or []
                except Exception:
                    return
                if any("fixrl-check" in " ".join(p) for p in procs):
                    api.kill(sb.id)
                    return
                time.sleep(0.02)

        t = threading.Thread(target=killer, daemon=True)
        if kill:
            t.start()
        try:
            yield sb
        finally:
            stop.set()


def test_container_killed_mid_check_is_error_then_retried(make_env, docker_available):
    opened = []

    def always(ws):
        opened.append(ws)
        return _container_killed_during_check(ws, kill=True)

    env = make_env(check_sandbox=always, check_retries=1)
    env.reset()
    call(env, "edit", path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")
    call(env, "submit")
    reward, info = env.finish()
    assert (reward, info.outcome, info.hidden_pass, len(opened)) == (0.0, "error", None, 2), info.error

    opened.clear()

    def once(ws):
        opened.append(ws)
        return _container_killed_during_check(ws, kill=len(opened) == 1)

    env = make_env(check_sandbox=once, check_retries=2)
    env.reset()
    call(env, "edit", path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")
    call(env, "submit")
    reward, info = env.finish()
    assert (reward, info.outcome, len(opened)) == (1.0, "pass", 2)
