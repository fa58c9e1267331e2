"""The records the trainer consumes: a group is its scored episodes (errored ones dropped, and
counted), its outcome follows its rewards, and a batch hands each kept episode its advantage."""
from __future__ import annotations

import pytest
from trainkit import FakeTraj

from fixrl.train.batch import Group, SampleBatch


def test_group_outcomes_dropped_episodes_and_advantages():
    mixed = Group("a", (FakeTraj("a", 0, 1.0, "pass"), FakeTraj("a", 0, 0.0, "error"), FakeTraj("a", 0, 0.0, "fail")))
    assert len(mixed) == 2 and [t.info.outcome for t in mixed] == ["pass", "fail"] and mixed[1].reward == 0.0
    assert [t.info.outcome for t in mixed.dropped] == ["error"] and mixed.rewards == [1.0, 0.0]
    assert mixed.outcome == "mixed" and mixed.advantages is None
    assert Group("b", (FakeTraj("b", 0, 1.0, "pass"),) * 2).outcome == "all_pass"
    assert Group("c", (FakeTraj("c", 0, 0.0, "fail"),) * 3).outcome == "all_fail"
    assert Group("d", (FakeTraj("d", 0, 1.0, "pass"), FakeTraj("d", 0, 0.0, "error"))).outcome == "too_small"
    with pytest.raises(ValueError, match="2 episodes"):
        mixed.with_advantages([0.5])

    other = Group("e", (FakeTraj("e", 1, 1.0, "pass"), FakeTraj("e", 1, 0.0, "fail")))
    batch = SampleBatch(kept=[mixed, other], sampled=[*mixed.episodes, *other.episodes], wanted=2)
    assert not batch.short and batch.episodes == [*mixed, *other]
    batch.set_advantages([0.5, -0.5, 0.25, -0.25])
    assert [g.advantages for g in batch.kept] == [(0.5, -0.5), (0.25, -0.25)]
    by_id = batch.advantages()
    assert [by_id.get(id(t)) for t in batch.sampled] == [0.5, None, -0.5, 0.25, -0.25]  # the errored one: not kept
    with pytest.raises(ValueError, match="3 advantages"):
        batch.set_advantages([0.0] * 3)
