"""Only `edit` changes the workspace: what code run by `test` writes is discarded, on every
backend. Attacks through the agent's own tools (edit, test, submit) on an unfixed task whose
edit rules are relaxed, so that the throwaway workspace, not the rules, is what is tested. And
`test` runs the public tests as the check runs its own: what code under test can see of how it
is run (environment, argv, working directory, /tmp, sys.path) is the same in both."""
from __future__ import annotations

import textwrap

import pytest
from envkit import CLAMP_BUG as BUGGY_LINE

from fixrl.envs import ToolCall

HEADER = '"""Small numeric helpers."""\n'
FIXED_LINE = "    return max(lo, min(x, hi))\n"

# One edit plants a loader: imported by the public tests, it leaves a marker in /tmp and a data
# file, then repairs its own file and plants a module (a one-edit search for the fix past the
# budget). The guard stops the Python writes (`test` runs under the check's guard); the rest
# is discarded by the throwaway workspace.
LOADER = HEADER + textwrap.dedent('''\
    import os as _os
    _here = _os.path.dirname(_os.path.abspath(__file__))
    with open("/tmp/judged-marker", "w") as _f:
        _f.write("seen by test\\n")
    with open(_os.path.join(_here, "notes.txt"), "w") as _f:
        _f.write("left by test\\n")
    _src = open(_os.path.join(_here, "core.py")).read()
    if "max(lo, " + "max(x, hi))" in _src:
        with open(_os.path.join(_here, "planted.py"), "w") as _f:
            _f.write("PLANTED = 1\\n")
        with open(_os.path.join(_here, "core.py"), "w") as _f:
            _f.write(_src.replace("max(lo, " + "max(x, hi))", "max(lo, " + "min(x, hi))"))
    ''')


def test_what_test_writes_never_reaches_the_check(relaxed_env):
    env = relaxed_env(max_edits=1)
    env.reset()
    obs = env.step(ToolCall("edit", {"path": "pkg/core.py", "old": HEADER, "new": LOADER})).observation
    assert obs.startswith("Edited pkg/core.py"), obs
    after_edit = env.sb.read_file("pkg/core.py")
    first = env.step(ToolCall("test", {})).observation
    assert first.startswith("Tests FAILED"), first
    assert "wrote the Python source pkg/planted.py" in first, first  # told why: the guard stopped it
    # The loader ran, yet nothing it wrote stayed.
    assert env.sb.read_file("pkg/core.py") == after_edit
    assert BUGGY_LINE in env.sb.read_file("pkg/core.py")
    with pytest.raises(FileNotFoundError):
        env.sb.read_file("pkg/planted.py")
    for left in ("pkg/notes.txt", "/tmp/judged-marker"):
        with pytest.raises(FileNotFoundError):
            env.sb.read_file(left)
    second = env.step(ToolCall("test", {})).observation  # the same run again: nothing carried over
    assert second == first, second
    env.step(ToolCall("submit", {}))
    reward, info = env.finish()
    assert reward == 0.0 and not info.hidden_pass, info


def test_an_honest_fix_is_unchanged_by_test(relaxed_env):
    env = relaxed_env(max_edits=1)
    env.reset()
    env.step(ToolCall("edit", {"path": "pkg/core.py", "old": BUGGY_LINE, "new": FIXED_LINE}))
    obs = env.step(ToolCall("test", {})).observation
    assert "passed" in obs and "failed" not in obs, obs
    assert FIXED_LINE in env.sb.read_file("pkg/core.py")
    env.step(ToolCall("submit", {}))
    reward, info = env.finish()
    assert reward == 1.0 and info.hidden_pass, info


# What code under test can see of how it is run, written where both runs leave it.
FINGERPRINT = HEADER + textwrap.dedent('''\
    import os as _os
    import re as _re
    import sys as _sys

    def _norm(text):
        return _re.sub(r"[0-9a-f]{8,}", "H", str(text))

    with open("fingerprint.txt", "w") as _f:
        _f.write(_norm(sorted(_os.environ.items())) + "\\n")
        _f.write(_norm(_sys.argv) + "\\n" + _norm(_os.getcwd()) + "\\n" + _norm(_sys.flags) + "\\n")
        _f.write(_norm(sorted(_os.listdir("/tmp"))) + "\\n" + _norm(_sys.path) + "\\n")
        _f.write(_norm(sorted(n for n in _sys.modules if not n.startswith("test_"))) + "\\n")  # not the tests
        _f.write(_norm(_sys.orig_argv) + "\\n" + _norm(sorted(vars(_sys.modules["__main__"]))) + "\\n")
    ''')


@pytest.mark.parametrize("backend", ["local", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def test_nothing_inside_tells_test_from_the_check(mini_suite, backend, request, tmp_path):
    """The agent's sandbox runs `test` (local or Docker); the check runs in a fresh sandbox of
    the rollouts' kind (forking: a fork of a warm interpreter)."""
    from fixrl import tasks
    from fixrl.sandbox import open_sandbox
    from fixrl.sandbox.forking import ForkingSandbox
    from fixrl.tasks.check.reward import guard_spec, run_public_tests

    if backend == "docker":
        request.getfixturevalue("docker_available")
    task = mini_suite.get("clamp-minmax")
    ws = tasks.materialize(task, tmp_path / "repo", "buggy")
    core = (ws / "pkg" / "core.py").read_text()
    (ws / "pkg" / "core.py").write_text(FINGERPRINT + core[len(HEADER):])
    changes = {"pkg/core.py": (ws / "pkg" / "core.py").read_text()}
    agent_backend = "docker" if backend == "docker" else "local"
    with open_sandbox(ws, backend=agent_backend) as sb:
        run_public_tests(task, sb, "python -m pytest -q tests/test_public.py", 60, changes)
        seen_by_test = sb.read_file("fingerprint.txt")
    check_sb = ForkingSandbox(ws) if backend == "forking" else open_sandbox(ws, backend=agent_backend)
    with check_sb:
        if backend == "forking":
            assert check_sb.forking, "no bubblewrap here: the forking check path is not tested"
        tasks.run_check(task, check_sb, guard=guard_spec(task, changes))
        seen_by_check = check_sb.read_file("fingerprint.txt")
    test_lines, check_lines = seen_by_test.splitlines(), seen_by_check.splitlines()
    assert test_lines[3].startswith("sys.flags(")  # the fingerprint is what it says
    # No exception for the forking check: its flags, the modules imported before the fork and
    # /tmp are those of a one-shot run (sandbox.inside.zygote).
    for name, t, c in zip(("environment", "argv", "cwd", "sys.flags", "/tmp", "sys.path",
                                          "sys.modules", "sys.orig_argv", "__main__"),
                          test_lines, check_lines):
        assert t == c, f"{name} differs: test-only {sorted(set(eval(t)) - set(eval(c))) if name == 'sys.modules' else t}" \
                       f" / check-only {sorted(set(eval(c)) - set(eval(t))) if name == 'sys.modules' else c}"
    assert test_lines == check_lines
