"""Per-episode renaming: pure substitution rules, and the env renaming a real sandbox."""
from __future__ import annotations

import random

import pytest

from fixrl.envs import ToolCall
from fixrl.envs.rename import choose_name, occurs, rename_text, reversible


def test_rename_text_rules():
    src = ("from pkg.core import clamp\n"
           "def clamp(x): return clamp_value(x)  # clamp it\n"
           "def test_clamp_upper(): assert clamp(1)\n"
           "class TestClamp: pass\n"
           "def _clamp(): 'clamps'\n")
    out = rename_text(src, "clamp", "fold")
    assert "import fold\n" in out and "def fold(x): return clamp_value(x)  # fold it" in out
    assert "def test_fold_upper(): assert fold(1)" in out  # test names would leak the original
    assert "_clamp()" in out and "'clamps'" in out  # other identifiers are left alone
    assert rename_text(out, "fold", "clamp") == src
    assert occurs(src, "clamp") and not occurs(src, "fold") and occurs("test_x_clamp", "clamp")


def test_choose_name_avoids_present_and_irreversible_names():
    texts = {"a.py": "def clamp(x):\n    fold = 1\n    return test_nudge_fold\n"}
    rng = random.Random(0)
    picks = {choose_name(rng, ["fold", "nudge", "sift", "clamp", "not valid", "class"], "clamp", texts)
             for _ in range(20)}
    assert picks == {"sift"}
    assert choose_name(rng, ["fold"], "clamp", texts) is None
    assert choose_name(rng, ["sift"], "clamp", texts, taken={"sift"}) is None
    assert reversible(texts, "clamp", "sift")


def test_env_renames_issue_sources_and_tests(make_env):
    names = set()
    for seed in range(3):
        env = make_env("clamp-minmax", rename=True, seed=seed)
        messages, _ = env.reset()
        (orig, new), = env.info.renamed.items()
        assert orig == "clamp" and new in env.suite.rename_pool
        names.add(new)
        assert f"`{new}` gives wrong results" in messages[1]["content"]
        assert "clamp" not in messages[1]["content"]
        grep = env.sb.exec("grep -rnw clamp . ; grep -rln 'test_clamp' .", timeout=10)
        assert grep.output.strip() == "", grep.output
        assert f"def {new}(x, lo, hi):" in env.sb.read_file("pkg/core.py")
        assert f"from pkg.core import {new}, scale" in env.sb.read_file("pkg/report.py")
        if seed == 0:
            # calls still resolve: the public tests fail exactly as they do without renaming
            out = env.step(ToolCall("test", {})).observation
            assert out.splitlines()[1].startswith("2 failed, 2 passed")
            assert f"test_{new}_inside" in out
    assert len(names) >= 2


def test_rename_skipped_when_a_module_has_the_name(make_env):
    env = make_env("clamp-minmax", rename=True)
    env.task = env.task.model_copy(update={"function": "core"})  # pkg/core.py: `import core` would break
    env.reset()
    assert env.info.renamed == {}
    assert "def clamp" in env.sb.read_file("pkg/core.py")


def test_check_runs_on_original_names(make_env):
    """The agent fixes the bug in renamed code; the fix is mapped back and passes."""
    env = make_env("clamp-minmax", rename=True, seed=5)
    env.reset()
    new = env.info.renamed["clamp"]
    src = env.sb.read_file("pkg/core.py")
    assert f"def {new}(" in src
    env.step(ToolCall("edit", {"path": "pkg/core.py", "old": "max(x, hi)", "new": "min(x, hi)"}))
    env.step(ToolCall("submit", {}))
    reward, info = env.finish()
    assert reward == 1.0 and info.outcome == "pass" and info.first_edit_right is True
    assert info.dropped_files == {}  # renamed-but-untouched test files are not "changes"


def test_pool_names_used_elsewhere_in_the_repository(mini_suite):
    """A pool name may be another function of the repository (the built-in suite's pool is its
    own function names): only files that mention the buggy function are renamed, and a file
    that uses the name for its own function keeps it when mapped back."""
    from fixrl.envs import EnvConfig, episode_env

    suite = mini_suite.model_copy(update={"rename_pool": ["doubled", "scale"]})
    task = suite.get("count-flip")
    with episode_env(task, EnvConfig(rename=True), suite) as env:
        env.reset()
        assert env.info.renamed == {"count_above": "doubled"}  # `scale` is used in core.py itself
        assert "def doubled(values, limit):" in env.sb.read_file("pkg/core.py")
        assert "def doubled(values):" in env.sb.read_file("pkg/report.py")  # untouched
        env.step(ToolCall("edit", {"path": "pkg/core.py", "old": "if v >= limit:", "new": "if v > limit:"}))
        env.step(ToolCall("edit", {"path": "pkg/report.py", "old": "def doubled(values):\n",
                                   "new": "def doubled(values):\n    # twice each value\n"}))
        reward, info = env.finish()
        assert reward == 1.0 and info.first_edit_right is True, info


@pytest.mark.slow
def test_renaming_keeps_the_public_verdict_on_builtin_tasks():
    """Renamed to another function's name of the same repository, the public tests fail and
    pass exactly as before (so the renamed workspace tells the agent the same story)."""
    import re
    from concurrent.futures import ThreadPoolExecutor

    from fixrl.envs import EnvConfig, episode_env
    from fixrl.tasks import load_suite
    from fixrl.tasks.suites import BUILTIN_SUITE

    suite = load_suite(BUILTIN_SUITE)
    sample = random.Random(3).sample([t for t in suite.tasks if t.function], 6)

    def verdicts(task):
        out = []
        for rename in (False, True):
            with episode_env(task, EnvConfig(rename=rename), suite, seed=11) as env:
                env.reset()
                assert bool(env.info.renamed) == rename, task.id
                line = env.step(ToolCall("test", {})).observation.splitlines()[:2]
                out.append([re.sub(r" in [\d.]+s.*", "", x) for x in line])
        return out

    with ThreadPoolExecutor(2) as pool:
        for task, (plain, renamed) in zip(sample, pool.map(verdicts, sample)):
            assert plain == renamed, (task.id, plain, renamed)
