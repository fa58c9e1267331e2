"""Behaviour statistics and scoring from trajectories (no sandboxes: info dicts as the env
writes them)."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from fixrl.evals.run import EvalResult, score
from fixrl.evals.stats import behaviour_stats
from fixrl.harness.agent.trajectory import Trajectory


def traj(task_id="t0", group=0, outcome="pass", reads=1, tests=1, edits=1, turns=4,
         rbfe=1, first_right=True, exit_status="submitted", tokens=10):
    info = dict(task_id=task_id, reads=reads, tests=tests, edits=edits, turns=turns,
                reads_before_first_edit=rbfe, first_edit_right=first_right,
                exit_status=exit_status, outcome=outcome)
    return Trajectory(task_id=task_id, token_ids=list(range(tokens + 5)),
                      assistant_mask=[0] * 5 + [1] * tokens, info=info, group=group)


def test_behaviour_stats():
    eps = [
        traj(outcome="pass", reads=2, edits=1, rbfe=2, first_right=True, tokens=10),
        traj(outcome="fail", reads=0, edits=3, rbfe=0, first_right=False, tokens=30,
             exit_status="out_of_turns"),
        traj(outcome="fail", reads=1, edits=0, rbfe=0, first_right=None, tokens=20,
             exit_status="out_of_tokens"),
        traj(outcome="error", reads=9, edits=9, tokens=999, exit_status="error"),
    ]
    s = behaviour_stats(eps)
    assert s["episodes"] == 4 and s["errors"] == 1 and s["scored"] == 3
    assert s["pass_rate"] == pytest.approx(1 / 3)
    assert s["reads"] == pytest.approx(1.0)  # the errored episode's 9 reads are left out
    assert s["edits"] == pytest.approx(4 / 3)
    assert s["policy_tokens"] == pytest.approx(20.0)
    assert s["policy_tokens_pass"] == 10.0 and s["policy_tokens_fail"] == 25.0
    assert s["exit_status"] == pytest.approx({"out_of_tokens": 1 / 3, "out_of_turns": 1 / 3,
                                              "submitted": 1 / 3})
    assert s["edited"] == 2
    assert s["read_before_edit"] == 0.5  # of the two that edited, one read first
    assert s["reads_before_first_edit"] == 1.0
    assert s["first_edit_right"] == 0.5 and s["first_edit_known"] == 2


def test_behaviour_stats_tolerates_missing_keys_and_empty():
    # A trajectory's info is a typed EpisodeInfo: keys an older file lacks take their defaults.
    s = behaviour_stats([Trajectory(task_id="x", info={"outcome": "fail"})])
    assert s["reads"] == 0.0 and s["read_before_edit"] is None and s["pass_rate"] == 0.0
    assert behaviour_stats([])["pass_rate"] is None
    # bare info dicts work too (no token counts then), missing keys left out of the means
    assert behaviour_stats([{"outcome": "pass", "reads": 3}])["reads"] == 3.0
    assert behaviour_stats([{"outcome": "fail"}])["reads"] is None


@dataclass
class TaskRecord:
    """The three fields `score` reads from a tasks.Task."""

    id: str
    family: str | None
    kind: str = "fix"


def make_tasks(n=3):
    return [TaskRecord(f"t{i}", f"fam{i % 2}") for i in range(n)]


def test_score_leaves_errors_out_of_pass_at_k():
    tasks = make_tasks(3)
    trajs = ([traj("t0", 0, "pass")] * 3 + [traj("t0", 0, "fail")]  # 3/4
             + [traj("t1", 1, "fail")] * 2 + [traj("t1", 1, "error")] * 2  # 0/2 scored
             + [traj("t2", 2, "error")] * 3 + [traj("t2", 2, "pass")])  # 1/1 scored
    results, overall = score(trajs, tasks, [1, 2, 4], n=4, seed=5)
    r0, r1, r2 = results
    assert (r0.passes, r0.scored, r0.errors) == (3, 4, 0)
    assert r0.pass_at["pass@1"] == 0.75 and r0.pass_at["pass@4"] == 1.0
    assert (r1.scored, r1.errors) == (2, 2) and r1.pass_at["pass@2"] == 0.0
    assert r1.pass_at["pass@4"] is None  # fewer than 4 scored episodes: no pass@4
    assert r2.pass_at["pass@1"] == 1.0 and r2.pass_at["pass@2"] is None
    assert overall["errors"] == 5
    assert overall["pass@1"]["mean"] == pytest.approx((0.75 + 0.0 + 1.0) / 3)
    assert overall["pass@1"]["tasks"] == 3 and overall["pass@4"]["tasks"] == 1
    assert r0.episode_seeds == ["5/0/0", "5/0/1", "5/0/2", "5/0/3"]
    assert r0.family == "fam0"


def test_result_round_trips_and_renders(tmp_path):
    tasks = make_tasks(2)
    trajs = [traj("t0", 0, "pass"), traj("t0", 0, "fail"), traj("t1", 1, "fail"),
             traj("t1", 1, "fail")]
    results, overall = score(trajs, tasks, [1, 2], n=2)
    r = EvalResult(policy={"name": "oracle"}, suite="s", split="heldout", n=2, ks=[1, 2], seed=0,
                   tasks=results, overall=overall)
    r.save(tmp_path)
    back = EvalResult.load(tmp_path)
    assert back.to_dict() == r.to_dict()
    md = (tmp_path / "results.md").read_text()
    assert "| pass@1 | 0.250 |" in md and "| t0 | fam0 | 1/2 | 0 | 0.500 | 1.000 |" in md
