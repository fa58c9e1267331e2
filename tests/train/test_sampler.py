"""Dynamic sampling: tries and kept counts against rollouts of known pass rates (fake Bernoulli
rollouts and the real scripted policies in real local sandboxes), errored episodes, the skip
memory, and its state round trip."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from trainkit import FakeTraj, bernoulli_rollout

from fixrl.train.sampler import DynamicSampler


def tasks(*ids):
    return [SimpleNamespace(id=i) for i in ids]


def test_all_uniform_tries_everything_and_comes_up_short():
    s = DynamicSampler(tasks("a", "b", "c"), num_generations=4, min_mixed_groups=2, max_group_tries=7,
                       groups_per_rollout=3)
    calls = []
    batch = s.sample(bernoulli_rollout({"a": 1.0, "b": 0.0, "c": 1.0}, G=4, calls=calls))
    assert batch.groups_tried == 7 and [len(c) for c in calls] == [3, 3, 1]  # the last call is capped
    assert batch.kept == [] and batch.short and batch.rollout_calls == 3
    assert batch.all_pass + batch.all_fail == 7 and len(batch.sampled) == 28


def test_all_mixed_stops_at_min_mixed_groups():
    # p = 0.5, G = 6: a group is uniform with chance 2/64; seeded, all of the first 4 are mixed
    s = DynamicSampler(tasks("a", "b", "c", "d", "e"), num_generations=6, min_mixed_groups=4,
                       max_group_tries=16, groups_per_rollout=2)
    batch = s.sample(bernoulli_rollout(dict.fromkeys("abcde", 0.5), G=6, seed=3))
    assert len(batch.kept) == 4 and batch.groups_tried == 4 and batch.rollout_calls == 2 and not batch.short
    assert all(len({t.reward for t in g}) == 2 for g in batch.kept)


def test_known_rates_counts_match_the_draws():
    """Tasks that always pass, never pass, or pass half the time: kept == the mixed groups among
    those tried, and sampling stops as soon as the batch is full."""
    rates = {"solved": 1.0, "hopeless": 0.0, "coin": 0.5}
    s = DynamicSampler(tasks(*rates), num_generations=6, min_mixed_groups=3, max_group_tries=12,
                       groups_per_rollout=2, seed=1)
    calls = []
    batch = s.sample(bernoulli_rollout(rates, G=6, seed=0, calls=calls))
    drawn = [i for c in calls for i in c]
    assert batch.groups_tried == len(drawn)
    assert batch.all_pass == drawn.count("solved") and batch.all_pass > 0
    assert len(batch.kept) + batch.all_fail + batch.all_pass == batch.groups_tried
    assert all(g[0].task_id == "coin" for g in batch.kept)
    assert len(batch.kept) >= 3 and len(batch.kept) - 3 < 2  # stopped in the call that filled it


def test_dynamic_sampling_off_keeps_everything_in_one_call():
    s = DynamicSampler(tasks("a", "b"), num_generations=3, dynamic_sampling=False, tasks_per_step=3)
    batch = s.sample(bernoulli_rollout({"a": 1.0, "b": 0.0}, G=3))
    assert batch.groups_tried == 3 and len(batch.kept) == 3 and batch.rollout_calls == 1 and not batch.short


def test_errored_episodes_are_dropped_before_the_mixed_check():
    def rollout(ts, k):
        # group 0: pass + error -> one scored episode, too small; group 1: pass, error, fail -> mixed
        return [FakeTraj("a", 0, 1.0, "pass"), FakeTraj("a", 0, 0.0, "error"),
                FakeTraj("b", 1, 1.0, "pass"), FakeTraj("b", 1, 0.0, "error"), FakeTraj("b", 1, 0.0, "fail")]

    s = DynamicSampler(tasks("a", "b"), num_generations=3, min_mixed_groups=1, max_group_tries=2,
                       groups_per_rollout=2)
    batch = s.sample(rollout)
    assert batch.errors == 2 and batch.too_small == 1 and len(batch.kept) == 1
    assert [t.info.outcome for t in batch.kept[0]] == ["pass", "fail"]


def test_skip_solved_draws_solved_tasks_less_often():
    rates = {"solved": 1.0, "coin1": 0.5, "coin2": 0.5, "coin3": 0.5}

    def draws(skip):
        s = DynamicSampler(tasks(*rates), num_generations=4, min_mixed_groups=2, max_group_tries=4,
                           groups_per_rollout=2, skip_solved=skip, skip_keep_prob=0.25, seed=0)
        roll = bernoulli_rollout(rates, G=4, seed=1)
        skipped = 0
        for _ in range(60):
            skipped += s.sample(roll).skipped["solved"]
        return s.draws["solved"] / sum(s.draws.values()), skipped, s.status("solved")

    share_plain, skipped_plain, status = draws(False)
    share_skip, skipped, _ = draws(True)
    assert status == "solved" and skipped_plain == 0 and skipped > 10
    assert share_plain == pytest.approx(0.25, abs=0.05)
    assert share_skip < share_plain / 2  # kept with probability 0.25 after its first all-pass group


def test_state_round_trip_continues_the_same_draws():
    rates = dict.fromkeys("abcdefg", 0.5)
    a = DynamicSampler(tasks(*rates), num_generations=4, min_mixed_groups=2, max_group_tries=6, seed=5)
    a.sample(bernoulli_rollout(rates, G=4, seed=1))
    state = a.state_dict()
    b = DynamicSampler(tasks(*rates), num_generations=4, min_mixed_groups=2, max_group_tries=6, seed=99)
    b.load_state_dict(state)
    ca, cb = [], []
    a.sample(bernoulli_rollout(rates, G=4, seed=2, calls=ca))
    b.sample(bernoulli_rollout(rates, G=4, seed=2, calls=cb))
    assert ca == cb and a.state_dict() == b.state_dict()
    with pytest.raises(ValueError, match="other tasks"):
        DynamicSampler(tasks("x"), num_generations=2).load_state_dict(state)


@pytest.mark.slow
def test_scripted_policies_in_real_sandboxes(train_suite):
    """The oracle passes every episode: no group is mixed, all tries are spent. A blind policy
    passes some: every kept group really holds a pass and a fail from the real hidden check."""
    from fixrl.envs import EnvConfig
    from fixrl.harness.agent.local_rollouts import LocalRollouts
    from fixrl.harness.agent.policies import ScriptedPolicy
    from fixrl.sandbox import SandboxPool
    from fixrl.tasks import load_suite

    suite = load_suite(train_suite)
    train = suite.split("train")
    env_config = EnvConfig(max_turns=4, rename=True)
    G = 3
    with SandboxPool(6, backend="local") as pool:
        def rollout_with(policy):
            return lambda ts, k: LocalRollouts(suite, env_config, pool=pool).run(policy, ts, G, k)

        oracle = DynamicSampler(train, num_generations=G, min_mixed_groups=1, max_group_tries=2,
                                groups_per_rollout=2)
        batch = oracle.sample(rollout_with(ScriptedPolicy("oracle")))
        assert batch.groups_tried == 2 and batch.all_pass == 2 and batch.kept == [] and batch.short
        assert all(t.reward == 1.0 and t.info.outcome == "pass" for t in batch.sampled)
        assert all(oracle.status(t.id) == "solved" for t in train if t.id in oracle.draws)

        blind = DynamicSampler(train, num_generations=G, min_mixed_groups=3, max_group_tries=3,
                               groups_per_rollout=3, seed=0)
        batch = blind.sample(rollout_with(ScriptedPolicy("blind", seed=1)))
        outcomes = [t.info.outcome for t in batch.sampled]
        assert set(outcomes) <= {"pass", "fail"} and batch.errors == 0
        assert batch.groups_tried == 3 and batch.rollout_calls == 1 and len(batch.kept) + batch.all_pass + batch.all_fail == batch.groups_tried
        for g in batch.kept:
            assert {t.info.outcome for t in g} == {"pass", "fail"}
