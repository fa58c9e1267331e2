"""Stable test identity (issue 32): a repository whose parametrised test ids are made from sets
of strings, so that each id depends on the interpreter's hash seed. Every run fixrl makes of
its tests -- the generator's two baseline runs (two sandboxes, each forking from an interpreter
of its own), its candidate runs, validation's check runs (forked and fresh), the episodes' check
in a reused sandbox -- must see the same ids; with a random seed per interpreter the baseline
loses those ids (passed in only one of two runs) and a check naming them finds them "missing"."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixrl.sandbox.base import HASH_SEED
from fixrl.tasks.generate.pipeline import generate

WORDS = '''\
def initials(words):
    """The first letters of `words`, sorted."""
    return "".join(sorted(w[0] for w in words))


def longest(words):
    """The longest of `words` (the first one met among equals)."""
    best = ""
    for w in words:
        if len(w) > len(best):
            best = w
    return best
'''

GROUPS = '[{"apple", "banana", "cherry"}, {"kiwi", "lime", "mango", "nectarine"}, {"fig", "grape"}]'

TESTS = f'''\
import pytest

from words import initials, longest

GROUPS = {GROUPS}


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: "+".join(g))
def test_initials(group):
    assert initials(group) == "".join(sorted(w[0] for w in group))


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: "+".join(g))
def test_longest(group):
    assert len(longest(group)) == max(len(w) for w in group)


@pytest.mark.parametrize("word", {{"alpha", "beta", "gamma"}})
def test_initial_of_one(word):
    assert initials([word]) == word[0]


def test_longest_of_two():
    assert longest(["ab", "abc"]) == "abc"
'''


def set_ids(seed: str) -> list[str]:
    """The `+`-joined ids the test file's sets get under hash seed `seed` (a fresh interpreter)."""
    code = f"print('\\n'.join('+'.join(g) for g in {GROUPS}))"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": seed}, capture_output=True,
                         text=True, check=True).stdout
    return out.split()


HASH_PROBE = "import sys; print(hash('fixrl'), sys.flags.hash_randomization, flush=True)"


def _pinned_hash() -> str:
    return subprocess.run([sys.executable, "-c", HASH_PROBE], env={"PYTHONHASHSEED": HASH_SEED},
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_every_interpreter_a_sandbox_starts_has_the_pinned_hash_seed(backend, tmp_path, request):
    """A command's fresh interpreter, and on the local backend a fork of the check sandbox's
    ready interpreter (started with -I before: that ignored PYTHONHASHSEED, each zygote drew its own)."""
    from fixrl.sandbox import SandboxPool

    if backend == "docker":
        request.getfixturevalue("docker_available")
    (tmp_path / "a.py").write_text("")
    want = _pinned_hash()
    with SandboxPool(1, backend=backend) as pool:
        with pool.acquire(tmp_path) as sb:
            assert sb.exec(f'python3 -c "{HASH_PROBE}"', timeout=60).output.strip() == want
        if backend == "local":
            with pool.check_sandbox(tmp_path) as sb:
                if getattr(sb, "forking", False):
                    prelude = f"def probe():\n    {HASH_PROBE}\n    return 0\n"
                    assert sb.fork_python(prelude, "probe", {}, timeout=60).output.strip() == want


@pytest.fixture(scope="module")
def set_suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("setids")
    repo = root / "words-repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "words.py").write_text(WORDS)
    (repo / "tests" / "test_words.py").write_text(TESTS)
    (repo / "conftest.py").write_text("")
    (repo / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    out = root / "suite"
    report = generate(repo, "python -m pytest -q", out, seed=0, backend="local", workers=2, progress=False)
    return out, report


def test_these_ids_depend_on_the_hash_seed():
    """The premise: these ids change with the hash seed (else the tests below prove nothing)."""
    assert len({tuple(set_ids(str(s))) for s in range(8)}) > 1


def test_every_baseline_run_sees_the_same_ids_and_the_check_names_them(set_suite):
    from fixrl.tasks import load_suite

    out, report = set_suite
    # 3 + 3 + 3 + 1 tests, every one passing in both baseline runs (two sandboxes, two zygotes)
    assert report.tests == 10
    assert report.valid >= 1 and report.invalid == 0 and report.flaky == 0
    pinned = {f"tests/test_words.py::test_longest[{i}]" for i in set_ids(HASH_SEED)}
    checks = [set(t.check.tests) for t in load_suite(out).tasks]
    assert any(pinned <= tests for tests in checks), checks


def test_validation_and_the_pooled_oracle_agree_in_fresh_and_forked_runs(set_suite, tmp_path):
    """What validate calls valid the oracle passes in a reused sandbox, and a check that must
    start a fresh interpreter (`-X dev`: no fork) finds the same ids as a forked one."""
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies.scripted import ScriptedPolicy
    from fixrl.sandbox import SandboxConfig
    from fixrl.tasks import load_suite
    from fixrl.tasks.check.validate import validate_suite

    out, _ = set_suite
    suite = load_suite(out)
    fresh = suite.model_copy(update={"tasks": [
        t.model_copy(update={"check": t.check.model_copy(update={
            "command": t.check.command.replace("python -m pytest", "python -X dev -m pytest", 1)})})
        for t in suite.tasks]})
    assert all("-X dev" in t.check.command for t in fresh.tasks)
    # (the generator's own validation judged the forked runs: report.invalid == 0 above)
    results = validate_suite(fresh, backend="local", jobs=1, repeats=2)
    assert results and all(r.ok for r in results), [(r.task_id, r.reasons) for r in results]
    with LocalRollouts(suite, EnvConfig(), SandboxConfig(backend="local", pool_size=1)) as rollouts:
        trajs = rollouts.run(ScriptedPolicy("oracle"), list(suite.tasks), 2, seed=0)
    assert [t.info.outcome for t in trajs] == ["pass"] * len(trajs), [t.info.error for t in trajs]


@pytest.mark.docker
def test_a_docker_check_finds_the_same_ids(set_suite, docker_available):
    from fixrl.tasks.check.validate import validate_suite

    out, _ = set_suite
    results = validate_suite(Path(out), backend="docker", jobs=1, repeats=2)
    assert results and all(r.ok for r in results), [(r.task_id, r.reasons) for r in results]


def test_ids_not_seen_in_both_baseline_runs_never_go_into_a_check():
    from fixrl.tasks.generate.baseline import TestRun, _check_baseline

    a = TestRun({"t.py::f[x+y]": "passed", "t.py::g": "passed"}, {}, 0, 1.0)
    b = TestRun({"t.py::f[y+x]": "passed", "t.py::g": "passed"}, {}, 0, 1.0)
    assert _check_baseline([a, b], "python -m pytest").stable == {"t.py::g"}


def test_a_test_failing_in_one_baseline_run_is_left_out_and_one_failing_in_both_stops():
    """sqlparse's sub-second timing test failed only in the run under the coverage profiler, on
    a loaded machine: that made the whole library "without passing tests" (0 tasks)."""
    from fixrl.tasks.generate.baseline import TestRun, _check_baseline
    from fixrl.tasks.generate.config import GenerateError

    plain = TestRun({"t.py::fast": "passed", "t.py::g": "passed"}, {}, 0, 1.0)
    profiled = TestRun({"t.py::fast": "failed", "t.py::g": "passed"}, {}, 1, 3.0)
    assert _check_baseline([plain, profiled], "python -m pytest").stable == {"t.py::g"}
    assert _check_baseline([profiled, plain], "python -m pytest").stable == {"t.py::g"}
    with pytest.raises(GenerateError, match="1 of 2 test.*fail on the unmodified.*t.py::fast"):
        _check_baseline([profiled, profiled], "python -m pytest")


def test_a_command_pinning_the_same_seed_still_forks_and_another_seed_runs_fresh():
    """A forked run cannot change its interpreter's seed: a command asking for the sandbox's own
    seed may fork (the generator's runs and the check alike), one asking for another may not."""
    from fixrl.tasks.check.run import _fork_env as check_fork_env
    from fixrl.tasks.format.pytest_command import parse_pytest_command
    from fixrl.tasks.generate.execute import _fork_env as gen_fork_env

    same = parse_pytest_command(f"PYTHONHASHSEED={HASH_SEED} python -m pytest -q tests")
    other = parse_pytest_command("PYTHONHASHSEED=123 python -m pytest -q tests")
    assert gen_fork_env(same) == {"PYTHONHASHSEED": HASH_SEED} and gen_fork_env(other) is None
    assert check_fork_env(same, None) == {"PYTHONHASHSEED": HASH_SEED} and check_fork_env(other, None) is None
