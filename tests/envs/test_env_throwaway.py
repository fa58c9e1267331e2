"""Only `edit` changes the workspace: what code run by `test` writes is discarded, on every
backend. Attacks through the agent's own tools (edit, test, submit) on an unfixed task whose
edit rules are relaxed, so that the throwaway workspace, not the rules, is what is tested."""
from __future__ import annotations

import textwrap

import pytest

from fixrl.envs import ToolCall
from fixrl.sandbox import SandboxPool
from fixrl.tasks.format.schema import RULE_NAMES

HEADER = '"""Small numeric helpers."""\n'
BUGGY_LINE = "    return max(lo, max(x, hi))\n"
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


@pytest.fixture(scope="module")
def forking_pool():
    with SandboxPool(1, backend="local") as pool:  # its check sandboxes fork pytest
        yield pool


@pytest.fixture(params=["local", "forking", pytest.param("docker", marks=pytest.mark.docker)])
def relaxed_env(request, make_env):
    relaxed = {"relax": list(RULE_NAMES)}

    def make():
        if request.param == "docker":
            request.getfixturevalue("docker_available")
            return make_env(backend="docker", rules=relaxed, max_edits=1)
        if request.param == "forking":
            return make_env(check_sandbox=request.getfixturevalue("forking_pool").check_sandbox, rules=relaxed,
                            max_edits=1)
        return make_env(rules=relaxed, max_edits=1)
    return make


def test_what_test_writes_never_reaches_the_check(relaxed_env):
    env = relaxed_env()
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
    env = relaxed_env()
    env.reset()
    env.step(ToolCall("edit", {"path": "pkg/core.py", "old": BUGGY_LINE, "new": FIXED_LINE}))
    obs = env.step(ToolCall("test", {})).observation
    assert "passed" in obs and "failed" not in obs, obs
    assert FIXED_LINE in env.sb.read_file("pkg/core.py")
    env.step(ToolCall("submit", {}))
    reward, info = env.finish()
    assert reward == 1.0 and info.hidden_pass, info
