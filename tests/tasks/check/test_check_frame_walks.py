"""The check's guard and installed libraries that walk the stack for module names (freezegun's
fake clocks ask `inspect.currentframe().f_back...` which modules called them, to honour their
ignore list): a correct fix that calls a clock while the hidden tests freeze time passes on
every backend; changed code that gets a frame itself, or through a trusted relay, is still
stopped. freezegun runs from a real environment (`fixrl.sandbox.environment`, cached) --
installed code, not the repository's."""
from __future__ import annotations

import dis
import inspect
import logging
import textwrap
from pathlib import Path

import pytest
from suitekit import fix_task, write_repo

from fixrl.sandbox import SandboxPool
from fixrl.sandbox.environment import EnvSpec, build_environment
from fixrl.sandbox.inside.check.guard import _opcodes
from fixrl.sandbox.inside.check.rules import _frame_dropped, _frame_relayed
from fixrl.tasks import Task, run_check
from fixrl.tasks.check.guard import spec_for

BUGGY = "import time\n\n\ndef stamp(x):\n    return (x, int(time.time()) - 1)\n"
GOOD = "import time\n\n\ndef stamp(x):\n    return (x, int(time.time()))\n"

HIDDEN = textwrap.dedent('''\
    import datetime

    from freezegun import freeze_time

    from calc import stamp

    SECRET = 1577836800


    @freeze_time("2020-01-01")
    def test_stamp():
        assert stamp(1) == (1, SECRET)


    def test_plain():
        assert stamp(2)[0] == 2
''')

HIDDEN_TESTS = ("tests/test_hidden.py::test_stamp", "tests/test_hidden.py::test_plain")

# changed code reaching a test's frame: each must stop the run (reward 0), each by the guard
ATTACKS = {
    "currentframe_locals": "import inspect\n_f = inspect.currentframe().f_back.f_locals\n",
    "inspect_stack": "import inspect\n_f = [f.frame.f_locals for f in inspect.stack()]\n",
    "getframe_back_locals": "import sys\n_f = sys._getframe(1).f_back.f_locals\n",
    "trusted_relay_hands_frame": "from relay import caller\n_f = caller().f_back\n",
}
# an unchanged helper of the repository that hands the frame inspect's relay gives it onwards
RELAY = "import inspect\n\n\ndef caller():\n    return inspect.currentframe()\n"


@pytest.fixture(scope="module")
def env_tag():
    return build_environment(EnvSpec(packages=("freezegun",)), "local")


@pytest.fixture(scope="module", params=["fresh", "forking"])
def pool(request, env_tag):
    with SandboxPool(1, backend="local", image=env_tag, forking=request.param == "forking") as p:
        yield p


def judge(pool, tmp_path: Path, calc: str):
    ws = write_repo(tmp_path / "ws")
    (ws / "calc.py").write_text(calc)
    (ws / "relay.py").write_text(RELAY)
    check = {"timeout": 30, "files": {"tests/test_hidden.py": HIDDEN}, "tests": list(HIDDEN_TESTS)}
    task = Task.model_validate(fix_task("t", repo=str(ws), check=check))
    with pool.acquire(ws) as sb:
        return run_check(task, sb, guard=spec_for({"calc.py": (BUGGY, None)}))


def test_a_correct_fix_calling_a_clock_passes_while_freezegun_walks_frames(pool, tmp_path):
    r = judge(pool, tmp_path, GOOD)
    assert r.outcome == "pass", (r.reason, r.output[-2000:])
    r = judge(pool, tmp_path, BUGGY)
    assert r.outcome == "fail" and "guard" not in r.reason, (r.reason, r.output[-2000:])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_changed_code_reaching_a_frame_is_still_stopped(pool, tmp_path, attack):
    calc = GOOD.replace("def stamp(x):\n", "def stamp(x):\n" + textwrap.indent(ATTACKS[attack], "    "))
    r = judge(pool, tmp_path, calc)
    assert r.outcome == "fail" and "_getframe" in r.reason, (r.reason, r.output[-2000:])


@pytest.mark.slow
def test_a_correct_fix_passes_on_docker(tmp_path, docker_available):
    image = build_environment(EnvSpec(packages=("freezegun",)), "docker")
    with SandboxPool(1, backend="docker", image=image) as pool:
        r = judge(pool, tmp_path, GOOD)
        assert r.outcome == "pass", (r.reason, r.output[-2000:])
        r = judge(pool, tmp_path, GOOD.replace("def stamp(x):\n", "def stamp(x):\n    " + ATTACKS["inspect_stack"]
                                               .replace("\n", "\n    ").rstrip() + "\n"))
        assert r.outcome == "fail" and "_getframe" in r.reason, (r.reason, r.output[-2000:])


# Byte-code shapes of a trusted caller of `inspect.currentframe()`: which ones only walk and locate.
def _walks_names():
    f = inspect.currentframe().f_back
    for _ in range(5):
        if f is None:
            break
        name, line, where = f.f_globals.get("__name__", ""), f.f_lineno, f.f_code.co_filename
        f = f.f_back
    del f
    return name, line, where


def _reads_locals_after_walking():
    f = inspect.currentframe().f_back
    return f.f_locals


def _reads_another_global():
    return inspect.currentframe().f_back.f_globals.get("SECRET")


def _returns_the_code():
    f = inspect.currentframe().f_back
    return f.f_code


def _returns_the_walked_frame():
    f = inspect.currentframe()
    while f.f_back is not None:
        f = f.f_back
    return f


def _stores_the_frame():
    f = inspect.currentframe()
    return [f.f_back]


def _yields_the_frame():
    f = inspect.currentframe()
    yield f.f_back


def _relays():
    return inspect.currentframe()


@pytest.mark.parametrize("caller, walks", [(_walks_names, True), (_reads_locals_after_walking, False),
                                           (_reads_another_global, False), (_returns_the_code, False),
                                           (_returns_the_walked_frame, False), (_stores_the_frame, False),
                                           (_yields_the_frame, False), (_relays, False)])
def test_only_a_walk_that_learns_locations_drops_the_frame(caller, walks):
    ops = _opcodes()
    code = caller.__code__
    call = next(i.offset for i in dis.get_instructions(code) if i.opname in ("CALL", "CALL_FUNCTION"))
    assert _frame_dropped(ops, code, call) is walks
    assert _frame_relayed(ops, code, call) is (caller is _relays)


def test_inspect_and_logging_currentframe_are_relays():
    ops = _opcodes()
    for relay in (inspect.currentframe, logging.currentframe):
        *_, call = [i.offset for i in dis.get_instructions(relay) if i.opname in ("CALL", "CALL_FUNCTION")]
        assert _frame_relayed(ops, relay.__code__, call)
