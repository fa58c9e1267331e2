"""`validate_task` / `fixrl tasks validate`: sound tasks pass, each kind of broken task is caught
with a clear reason, nothing hangs."""
from __future__ import annotations

import json
import time

import pytest
import yaml
from suitekit import BUG, FIX, HIDDEN, QUESTION_CHECK, REPO_FILES, fix_task, make_suite, question_task

from fixrl.harness.cli import main as fixrl
from fixrl.sandbox import SandboxPool
from fixrl.tasks import Task, load_suite, validate_suite, validate_task
from fixrl.tasks.check.run import GUARD_STOPPED

IGNORES_ANSWER = {"command": "python -c 'pass'", "files": {}}


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(2, backend="local") as p:
        yield p


def _task(tmp_path, data, **suite):
    return load_suite(make_suite(tmp_path, [data], **suite)).tasks[0]


def test_sound_fix_task(pool, tmp_path):
    res = validate_task(_task(tmp_path, fix_task("a")), pool, repeats=2)
    assert res.ok and res.reasons == [] and not res.flaky, res.reasons
    assert res.verdicts == {"buggy state": ["fail", "fail"], "reference fix": ["pass", "pass"]}
    assert res.seconds > 0 and res.task_id == "a"


def test_sound_question_task(pool, tmp_path):
    res = validate_task(_task(tmp_path, question_task("q")), pool, repeats=1)
    assert res.ok, res.reasons
    assert res.verdicts == {"reference answer": ["pass"], "wrong (empty) answer": ["fail"]}


def test_question_check_that_ignores_the_answer(pool, tmp_path):
    q = question_task("q", check=IGNORES_ANSWER)
    res = validate_task(_task(tmp_path, q), pool, repeats=1)
    assert not res.ok and res.reasons == ["check passes with a wrong (empty) answer: it does not verify the answer"]


def test_check_that_passes_on_the_bug(pool, tmp_path):
    t = fix_task("weak", check={"tests": ["tests/test_hidden.py::test_mul"],
                                "command": "python -m pytest -q tests/test_hidden.py -k test_mul"})
    res = validate_task(_task(tmp_path, t), pool, repeats=1)
    assert not res.ok and not res.flaky
    assert res.reasons == ["check passes on the buggy state: it does not detect the bug"]


def test_check_that_fails_with_the_fix(pool, tmp_path):
    wrong = HIDDEN.replace("mul(2, 3) == 6", "mul(2, 3) == 7")
    res = validate_task(_task(tmp_path, fix_task("strict", check={"files": {"tests/test_hidden.py": wrong}})),
                        pool, repeats=1)
    assert not res.ok and len(res.reasons) == 1
    assert res.reasons[0].startswith("check fails with the reference fix: ")
    assert "tests/test_hidden.py::test_mul failed" in res.reasons[0]


def test_bug_that_does_not_apply(pool, tmp_path):
    res = validate_task(_task(tmp_path, fix_task("nobug", bug=BUG.replace("a + b", "a ** b"))), pool)
    assert not res.ok and "field 'bug': the bug patch to the clean repository does not apply" in res.reasons[0]
    assert res.verdicts == {}


def test_check_that_hangs_is_invalid_and_bounded(pool, tmp_path):
    t = fix_task("hang", check={"command": "python -c 'import time; time.sleep(600)'", "tests": [], "files": {},
                                "timeout": 2})
    start = time.monotonic()
    res = validate_task(_task(tmp_path, t), pool, repeats=3)
    assert time.monotonic() - start < 60
    assert not res.ok and "check timed out after 2s on the buggy state" in res.reasons
    assert "check timed out after 2s on the reference fix" in res.reasons
    assert res.verdicts == {"buggy state": ["fail"], "reference fix": ["fail"]}  # no pointless repeats


def test_repository_without_tests(pool, tmp_path):
    root = make_suite(tmp_path, [fix_task("notests")], repo_files={"calc.py": "def add(a, b):\n    return a + b\n\n\n"
                                                                             "def mul(a, b):\n    return a * b\n"})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert not res.ok
    assert any("public test command 'python -m pytest -q' exited 5: no tests collected "
               "(does the repository have tests?)" in r for r in res.reasons), res.reasons


def test_public_tests_the_guard_stops_are_invalid(pool, tmp_path):
    # The repository's conftest replaces pytest's runner: every public test "passes", pytest
    # exits 0, and the `test` tool says FAILED with the guard's reason; validation says why.
    conftest = "import _pytest.python\n\n_pytest.python.Function.runtest = lambda self: None\n"
    root = make_suite(tmp_path, [question_task("stopped")], repo_files={**REPO_FILES, "tests/conftest.py": conftest})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert not res.ok
    assert any(r.startswith(f"public test command 'python -m pytest -q': {GUARD_STOPPED}") and "runtest" in r
               for r in res.reasons), res.reasons


def test_flaky_check_is_flagged(pool, tmp_path):
    # A coin flip per run, in both states: all-equal verdicts in both have probability (2/256)^2.
    flip = "python -c 'import os, sys; sys.exit(os.urandom(1)[0] % 2)'"
    q = question_task("coin", check={"command": flip, "files": {}})
    res = validate_task(_task(tmp_path, q), pool, repeats=8)
    assert not res.ok and res.flaky
    assert any(r.startswith("flaky: the check passed ") for r in res.reasons)


def test_file_and_function_must_exist(pool, tmp_path):
    root = make_suite(tmp_path, [question_task("q1", file="nope.py"), question_task("q2", file="calc.py", function="sub"),
                                 question_task("q3", file="calc.py", function="add")])
    r1, r2, r3 = (validate_task(t, pool, repeats=1) for t in load_suite(root).tasks)
    assert r1.reasons == ["field 'file': nope.py is not in the buggy repository"]
    assert r2.reasons == ["field 'function': no function 'sub' is defined in calc.py"]
    assert r3.ok, r3.reasons


def test_failing_setup_is_reported(pool, tmp_path):
    res = validate_task(_task(tmp_path, fix_task("setup", setup=["python -c 'raise SystemExit(3)'"])), pool, 1)
    assert not res.ok and "setup command \"python -c 'raise SystemExit(3)'\" failed with exit status 3" in res.reasons[0]


def test_visible_check_file_is_a_warning(pool, tmp_path):
    root = make_suite(tmp_path, [question_task("seen")], repo_files={**REPO_FILES, "check_answer.py": QUESTION_CHECK})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert res.ok, res.reasons
    assert res.warnings == ["check file check_answer.py is already in the buggy repository: the agent can read it"]


def test_repository_test_used_as_the_check_is_not_a_leak(pool, tmp_path):
    """The generator's checks are the repository's own test files, unchanged: the public tests run
    them anyway, so no warning (every generated task would get one)."""
    root = make_suite(tmp_path, [fix_task("own-tests")], repo_files={**REPO_FILES, "tests/test_hidden.py": HIDDEN})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert res.ok and res.warnings == [], (res.reasons, res.warnings)


def test_hidden_check_that_overrides_a_repository_test_is_quiet(pool, tmp_path):
    older = HIDDEN.replace("def test_mul():\n    assert mul(2, 3) == 6\n", "")
    root = make_suite(tmp_path, [fix_task("newer")], repo_files={**REPO_FILES, "tests/test_hidden.py": older})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert res.ok and res.warnings == [], (res.reasons, res.warnings)


def test_hidden_check_written_by_the_bug_is_a_leak(pool, tmp_path):
    buggy = REPO_FILES["calc.py"].replace("a + b", "a - b")
    t = fix_task("leaky", bug=None, bug_files={"calc.py": buggy, "tests/test_hidden.py": HIDDEN})
    res = validate_task(_task(tmp_path, t), pool, repeats=1)
    assert res.ok, res.reasons
    assert res.warnings == ["check file tests/test_hidden.py is written into the buggy repository by the task's "
                            "bug: the agent can read it"]


def test_hidden_check_copied_elsewhere_in_the_repository_is_a_leak(pool, tmp_path):
    root = make_suite(tmp_path, [fix_task("copied")], repo_files={**REPO_FILES, "notes/hidden.txt": HIDDEN})
    res = validate_task(load_suite(root).tasks[0], pool, repeats=1)
    assert res.ok, res.reasons
    assert res.warnings == ["check file tests/test_hidden.py is in the buggy repository as notes/hidden.txt: "
                            "the agent can read it"]


def test_src_layout_checks_with_the_test_commands_options(pool, tmp_path):
    """A src/ layout importable only through `-o pythonpath=src` (as the generator writes
    cachetools' checks): the check finds its tests in the fresh and the reused check sandbox."""
    files = {"src/calc.py": REPO_FILES["calc.py"], "tests/test_calc.py": REPO_FILES["tests/test_calc.py"]}
    cmd = "python -m pytest -q -o pythonpath=src"
    t = fix_task("src", bug=BUG.replace("calc.py", "src/calc.py"), fix=FIX.replace("calc.py", "src/calc.py"),
                 public_tests=cmd, check={"command": f"{cmd} tests/test_hidden.py"})
    task = load_suite(make_suite(tmp_path, [t], repo_files=files)).tasks[0]
    res = validate_task(task, pool, repeats=2)
    assert res.ok, res.reasons
    assert res.verdicts == {"buggy state": ["fail", "fail"], "reference fix": ["pass", "pass"]}


def test_validate_suite_reports_bad_files_and_runs_in_parallel(tmp_path):
    root = make_suite(tmp_path, [question_task("good"), question_task("weak", check=IGNORES_ANSWER)])
    (root / "tasks" / "broken.yaml").write_text("id: broken\nissue: [\n")
    seen = []
    results = validate_suite(root, jobs=2, repeats=1, progress=seen.append)
    by_id = {r.task_id: r for r in results}
    assert set(by_id) == {"good", "weak", "broken"} and len(seen) == 3
    assert by_id["good"].ok and not by_id["weak"].ok
    assert "invalid YAML" in by_id["broken"].reasons[0] and by_id["broken"].file.endswith("broken.yaml")


# ---------------------------------------------------------------- the command

def test_cli_validate_json_and_exit_codes(tmp_path, capsys):
    root = make_suite(tmp_path, [question_task("good"), fix_task("bad", fix=BUG)])
    assert fixrl(["tasks", "validate", str(root), "--json", "--repeats", "1", "-j", "2"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["summary"] == {**out["summary"], "tasks": 2, "valid": 1, "invalid": 1, "flaky": 0}
    bad = next(r for r in out["results"] if r["task_id"] == "bad")
    assert "fix patch to the buggy repository does not apply" in bad["reasons"][0]
    assert fixrl(["tasks", "validate", str(root), "--task", "good", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    assert "✓ good" in text and "1/1 tasks valid" in text
    # one task file on its own
    assert fixrl(["tasks", "validate", str(root / "tasks" / "good.yaml"), "--repeats", "1"]) == 0
    capsys.readouterr()


def test_cli_validate_bad_input(tmp_path, capsys):
    assert fixrl(["tasks", "validate", str(tmp_path / "nope")]) == 2
    assert "no such suite directory or task file" in capsys.readouterr().err
    root = make_suite(tmp_path, [fix_task("good")])
    assert fixrl(["tasks", "validate", str(root), "--task", "ghost"]) == 2
    assert "no task(s) ghost in the suite" in capsys.readouterr().err
    (root / "suite.yaml").write_text("defaults: [1, 2]\n")
    assert fixrl(["tasks", "validate", str(root)]) == 2
    assert "suite.yaml: field 'defaults'" in capsys.readouterr().err
    assert fixrl(["tasks", "validate", str(root), "--repeats", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_cli_text_output_says_why(tmp_path, capsys):
    root = make_suite(tmp_path, [question_task("weak", check=IGNORES_ANSWER)])
    assert fixrl(["tasks", "validate", str(root), "--repeats", "1"]) == 1
    text = capsys.readouterr().out
    assert "✗ weak" in text and "check passes with a wrong (empty) answer" in text and "0/1 tasks valid" in text


@pytest.mark.docker
def test_validate_in_docker(docker_available, tmp_path):
    root = make_suite(tmp_path, [fix_task("good"), question_task("q"),
                                 fix_task("weak", check={"tests": ["tests/test_hidden.py::test_mul"],
                                                         "command": "python -m pytest -q tests/test_hidden.py -k mul"})])
    results = {r.task_id: r for r in validate_suite(root, backend="docker", jobs=2, repeats=2)}
    assert results["good"].ok and results["q"].ok, (results["good"].reasons, results["q"].reasons)
    assert results["weak"].reasons == ["check passes on the buggy state: it does not detect the bug"]


def test_task_objects_built_in_python_validate_too(pool, tmp_path):
    """The generator builds Task objects without a task file: paths resolve from suite_dir."""
    root = make_suite(tmp_path, [])
    (root / "bug.patch").write_text(BUG)
    (root / "check_answer.py").write_text(QUESTION_CHECK)
    task = Task.model_validate(question_task("py", bug="bug.patch",
                                             check={"files": {"check_answer.py": "check_answer.py"},
                                                    "command": "python check_answer.py"}))
    task.suite_dir = root
    res = validate_task(task, pool, repeats=1)
    assert res.ok, res.reasons


# ---------------------------------------------------------------- the validation cache

def _plain(results):
    return [{k: v for k, v in r.to_json().items() if k != "cached"} for r in results]


def test_cache_reuses_unchanged_tasks_and_reruns_changed_ones(tmp_path):
    root = make_suite(tmp_path, [fix_task("a"), fix_task("b")])
    first = validate_suite(root, jobs=2, repeats=1, cache=True)
    assert [r.cached for r in first] == [False, False] and all(r.ok for r in first)
    assert (root / ".fixrl-cache" / "validate.json").is_file()
    assert not (root / ".fixrl-cache" / "validate.json.partial").exists()
    again = validate_suite(root, jobs=2, repeats=1, cache=True)
    assert [r.cached for r in again] == [True, True] and _plain(again) == _plain(first)
    # a byte-code cache or .pytest_cache in the repository is not a change; any other file is
    (root / "repo" / "__pycache__").mkdir()
    (root / "repo" / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"junk")
    assert [r.cached for r in validate_suite(root, jobs=2, repeats=1, cache=True)] == [True, True]
    (root / "repo" / "README").write_text("a file the tasks never mention\n")
    assert [r.cached for r in validate_suite(root, jobs=2, repeats=1, cache=True)] == [False, False]
    # other settings (here: repeats) are other results
    assert [r.cached for r in validate_suite(root, jobs=2, repeats=2, cache=True)] == [False, False]
    # a task file changed: that task alone runs again
    with open(root / "tasks" / "b.yaml", "a") as f:
        f.write("# edited\n")
    assert [r.cached for r in validate_suite(root, jobs=2, repeats=2, cache=True)] == [True, False]
    # a changed verdict is stored too: the bug no longer breaks the check
    weak = fix_task("a", check={"tests": ["tests/test_hidden.py::test_mul"],
                                "command": "python -m pytest -q tests/test_hidden.py -k test_mul"})
    (root / "tasks" / "a.yaml").write_text(yaml.safe_dump(weak))
    res = validate_suite(root, jobs=2, repeats=1, cache=True)
    assert not res[0].ok and not res[0].cached
    res2 = validate_suite(root, jobs=2, repeats=1, cache=True)
    assert res2[0].cached and _plain(res2) == _plain(res)


def test_cli_cache_message_no_cache_and_corrupt_cache(tmp_path, capsys):
    root = make_suite(tmp_path, [question_task("q")])
    assert fixrl(["tasks", "validate", str(root), "--repeats", "1", "-j", "1"]) == 0
    assert "reused" not in capsys.readouterr().out
    assert fixrl(["tasks", "validate", str(root), "--repeats", "1", "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "✓ q  cached" in out
    assert "reused 1 cached result(s) (unchanged task and repository); --no-cache to re-run" in out
    assert fixrl(["tasks", "validate", str(root), "--repeats", "1", "-j", "1", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "reused" not in out and "cached" not in out
    (root / ".fixrl-cache" / "validate.json").write_text('{"format": 1, "tasks": ')
    assert fixrl(["tasks", "validate", str(root), "--repeats", "1", "-j", "1", "--json"]) == 0
    captured = capsys.readouterr()
    assert "warning: ignoring the validation cache" in captured.err and "unreadable" in captured.err
    assert json.loads(captured.out)["results"][0]["cached"] is False
    assert json.loads((root / ".fixrl-cache" / "validate.json").read_text())["format"] == 1  # rewritten


def test_checking_code_is_everything_validation_runs():
    """The key's code hash covers the host-side guard, every file shipped into the sandbox (the
    runner's runtime guard), the sandbox backends, the pinned hash seed and how environments are
    built: a change to any of them can change a verdict."""
    from fixrl.sandbox import shipping
    from fixrl.tasks.check import validate_cache

    root = validate_cache._ROOT
    files = {p.relative_to(root).as_posix() for p in validate_cache.checking_code_files()}
    assert {f"sandbox/inside/{rel}" for rel in shipping.package_files()} <= files
    assert {"tasks/check/guard.py", "tasks/check/run.py", "tasks/check/validate_cache.py", "sandbox/base.py",
            "sandbox/environment.py", "sandbox/local.py", "sandbox/docker.py", "tasks/format/loader.py",
            "tasks/format/reference.py", "tasks/format/materialize.py"} <= files
    assert not any(f.startswith(("harness/", "train/", "tasks/generate/")) for f in files)  # not the verdict's


def test_cache_key_changes_with_a_byte_of_either_guard(tmp_path, monkeypatch):
    """A copy of fixrl's checking code: one byte changed in the host-side guard, or in the guard
    shipped into the sandbox, is another key (a cached verdict of the old guard is not reused)."""
    import shutil

    from fixrl.sandbox import shipping
    from fixrl.tasks.check import validate_cache
    from fixrl.tasks.check.validate_cache import ValidationCache

    code = tmp_path / "code"
    for top in ("sandbox", "tasks"):
        shutil.copytree(validate_cache._ROOT / top, code / top,
                        ignore=shutil.ignore_patterns("suites", "__pycache__", "repo"))
    monkeypatch.setattr(validate_cache, "_ROOT", code)
    monkeypatch.setattr(shipping, "INSIDE_DIR", code / "sandbox" / "inside")
    root = make_suite(tmp_path, [fix_task("a")])
    task = load_suite(root).tasks[0]

    def key() -> str:
        return ValidationCache(root, backend="local", repeats=1, image=None).key(task)

    before = key()
    assert before is not None and key() == before
    for guard in (code / "tasks" / "check" / "guard.py", code / "sandbox" / "inside" / "check" / "guard.py"):
        original = guard.read_bytes()
        guard.write_bytes(original + b"\n")
        assert key() != before, guard
        guard.write_bytes(original)
        assert key() == before


def test_cache_key_changes_when_the_environment_is_rebuilt(tmp_path, monkeypatch):
    """A task with an environment is keyed by what its environment holds: not built yet, no
    key (built first, then keyed); rebuilt with another version of a package, another key."""
    from fixrl.sandbox.environment import env_dir
    from fixrl.tasks.check.validate_cache import ValidationCache

    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    root = make_suite(tmp_path, [fix_task("a")], suite={"environment": {"packages": ["six"]}})
    task = load_suite(root).tasks[0]
    assert task.env_tag is not None
    cache = ValidationCache(root, backend="local", repeats=1, image=None)
    assert cache.key(task) is None   # not built: nothing to key by yet
    site = env_dir(task.env_tag) / "lib" / "python3.11" / "site-packages"
    (site / "six-1.16.0.dist-info").mkdir(parents=True)
    (env_dir(task.env_tag) / "bin").mkdir()
    (env_dir(task.env_tag) / "bin" / "python").write_text("")
    cache.forget_runtimes()
    built = cache.key(task)
    assert built is not None and cache.key(task) == built
    (site / "six-1.16.0.dist-info").rename(site / "six-1.17.0.dist-info")   # rebuilt: pip resolved a newer six
    cache.forget_runtimes()
    assert cache.key(task) != built
