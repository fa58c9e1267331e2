"""The edit rules through the agent's own tools, on a built-in task with the local backend:
an `edit` whose result breaks it is refused before it is written (the rule and the line named,
the edit budget spent); a state that breaks it written by other means fails at submit with
`info.rule_violations` (a fail, not an error); the oracle still passes with renaming on."""
from __future__ import annotations

import json
import random

import pytest

from fixrl import tasks
from fixrl.envs import EnvConfig, ToolCall, episode_env
from fixrl.envs.scripted import make_plan, run_plan
from fixrl.envs.types import EpisodeInfo
from fixrl.tasks.suites import BUILTIN_SUITE

TASK = "hand.median.unsorted"
PATH = "minicalc/stats.py"
BUGGY = "    ordered = list(values)\n"
FIXED = "    ordered = sorted(values)\n"
REFUSED = "Edit refused by the task's change policy"


@pytest.fixture(scope="module")
def builtin():
    return tasks.load_suite(BUILTIN_SUITE)


def _env(stack, suite, **config):
    return stack.enter_context(episode_env(suite.get(TASK), EnvConfig(**config), suite, backend="local"))


def call(env, name, **args):
    return env.step(ToolCall(name, args)).observation


def test_a_rule_breaking_edit_is_refused_before_it_is_written_and_spends_the_budget(builtin):
    import contextlib

    with contextlib.ExitStack() as stack:
        env = _env(stack, builtin, max_edits=2)
        env.reset()
        assert not env.task.limits.count_failed_edits  # a refusal counts all the same
        payload = "    import sys\n    ordered = getattr(sys, 'mod' + 'ules') and sorted(values)\n"
        obs = call(env, "edit", path=PATH, old=BUGGY, new=payload)
        assert obs.startswith(REFUSED), obs
        assert "- imports: line 18: imports `sys`" in obs and "- computed-names: line 19:" in obs, obs
        assert "counts against your edit budget" in obs and "1 edit(s) left" in obs
        assert BUGGY in env.sb.read_file(PATH) and "sys" not in env.sb.read_file(PATH)
        assert env.info.rule_refusals == 1 and env.info.edits == 0 and env.edits_left == 1
        assert env.info.actions[-1] == f"edit {PATH} (refused)"
        # an object equal to everything, the other way round: refused too, and the budget is gone
        obs = call(env, "edit", path=PATH, old=BUGGY,
                   new="    class Same:\n        def __eq__(self, o):\n            return True\n" + BUGGY)
        assert obs.startswith(REFUSED) and "- comparison-dunders: line 19: defines `__eq__`" in obs, obs
        assert env.edits_left == 0
        obs = call(env, "edit", path=PATH, old=BUGGY, new=FIXED)
        assert "edit budget" in obs and "is used up" in obs, obs
        call(env, "submit")
        reward, info = env.finish()
        assert reward == 0.0 and info.outcome == "fail" and info.rule_violations == []
        assert info.rule_refusals == 2 and info.refused_edits == 1


def test_an_ordinary_fix_is_not_refused(builtin):
    import contextlib

    with contextlib.ExitStack() as stack:
        env = _env(stack, builtin)
        env.reset()
        assert call(env, "edit", path=PATH, old=BUGGY, new=FIXED).startswith("Edited")
        call(env, "submit")
        reward, info = env.finish()
        assert reward == 1.0 and info.rule_refusals == 0 and info.rule_violations == []


def test_a_rule_breaking_state_written_by_other_means_fails_at_submit(builtin):
    """The right fix, plus a class equal to everything written through the sandbox (as code the
    agent runs with `test` could): the check never runs, the episode is a fail (not an error)."""
    import contextlib

    with contextlib.ExitStack() as stack:
        env = _env(stack, builtin)
        env.reset()
        assert call(env, "edit", path=PATH, old=BUGGY, new=FIXED).startswith("Edited")
        text = env.sb.read_file(PATH)
        env.sb.write_file(PATH, text + "\n\nclass Same:\n    def __eq__(self, other):\n        return True\n")
        call(env, "submit")
        reward, info = env.finish()
    assert reward == 0.0 and info.outcome == "fail" and info.hidden_pass is False and info.error is None, info
    assert info.exit_status == "submitted" and info.check_tests == {}
    [violation] = info.rule_violations
    line = len(text.splitlines()) + 4
    assert violation.startswith(f"comparison-dunders: {PATH}:{line}: defines `__eq__`"), violation
    assert PATH not in info.dropped_files
    # the record carries it (transcripts, eval reports)
    back = EpisodeInfo.from_dict(json.loads(json.dumps(info.to_dict())))
    assert back.rule_violations == info.rule_violations and back.rule_refusals == 0


def test_the_oracle_still_passes_with_renaming(builtin):
    fix_tasks = [t for t in builtin.tasks if t.kind == "fix" and t.function][:6]
    assert len(fix_tasks) == 6
    for task in fix_tasks:
        with episode_env(task, EnvConfig(rename=True, max_edits=1), builtin, backend="local", seed=2) as env:
            reward, info = run_plan(env, make_plan("oracle", task, env, random.Random(2)))
        assert reward == 1.0 and info.renamed and info.rule_refusals == 0, (task.id, info)


def test_an_episode_record_of_an_earlier_version_loads_its_rule_fields():
    """Records written before the edit rules were renamed stored `policy_refusals` and
    `policy_violations`: they load into `rule_refusals` and `rule_violations`."""
    old = {"task_id": "t", "outcome": "fail", "policy_refusals": 2, "policy_violations": ["exec: a.py:3: x"]}
    info = EpisodeInfo.from_dict(old)
    assert info.rule_refusals == 2 and info.rule_violations == ["exec: a.py:3: x"] and info.extra == {}
    assert EpisodeInfo.from_dict(info.to_dict()) == info
