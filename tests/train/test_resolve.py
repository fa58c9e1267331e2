"""Resolving a GRPO config: the user's config stays as given (a derived field left None), the
resolved record fills the derived values in, is frozen and round-trips through config.json;
earlier names the other tests do not cover (loss types, a run directory's config.json holding
derived values and dotted keys, SFT's `epochs`) load with today's names."""
from __future__ import annotations

import dataclasses
import json

import pytest

from fixrl.train.resolve import config_from_dict, load_config, make_config, resolve, sft_config_from_dict


def test_resolve_fills_derived_values_once_and_leaves_the_users_config_as_given(tmp_path):
    cfg = make_config("dr_grpo")
    assert (cfg.epsilon_high, cfg.loss_constant, cfg.groups_per_rollout, cfg.precision) == (None, None, None, None)
    run = resolve(cfg, precision="fp32")
    assert (run.epsilon_high, run.loss_constant, run.groups_per_rollout, run.precision) == \
        (cfg.epsilon, 6 * cfg.max_new_tokens, cfg.tasks_per_step, "fp32")  # dynamic sampling off: tasks_per_step
    assert resolve(make_config("dynamic_mean")).groups_per_rollout == 4  # min_mixed_groups
    given = resolve(make_config("dapo", groups_per_rollout=2, loss_constant=7))
    assert (given.epsilon_high, given.groups_per_rollout, given.loss_constant, given.precision) == (0.28, 2, 7, None)
    assert resolve(make_config("dynamic_mean", max_turns=None)).loss_constant is None  # no budget to derive it from
    assert resolve(run) == run
    for record in (cfg, run):
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.beta = 1.0
    run.save(tmp_path / "config.json")
    assert resolve(load_config(tmp_path / "config.json")) == run


def test_earlier_names_not_covered_elsewhere_load_with_todays(tmp_path):
    assert make_config("dynamic_mean", loss_type="constant").loss_type == "dr_grpo"
    assert make_config("dynamic_mean", loss_type="seq_mean_token_mean").loss_type == "grpo"
    # a run directory's config.json holds every derived value; dotted keys name nested fields
    saved = {**make_config("dynamic_mean").to_dict(), "epsilon_high": 0.3, "loss_constant": 100,
             "groups_per_rollout": 3, "precision": "fp32"}
    saved.pop("env")
    saved["env.max_turns"] = 4
    (tmp_path / "config.json").write_text(json.dumps(saved))
    run = resolve(load_config(tmp_path / "config.json"))
    assert (run.epsilon_high, run.loss_constant, run.groups_per_rollout, run.precision, run.max_turns) == \
        (0.3, 100, 3, "fp32", 4)
    assert run.env.rename  # GRPO's default of the fields the file leaves out
    with pytest.raises(ValueError, match="unknown EnvConfig field"):
        config_from_dict({"env": {"turns": 3}})
    sft = sft_config_from_dict({"model": "m", "data": ["d.jsonl"], "out": "o", "epochs": 3})
    assert sft.num_train_epochs == 3
    with pytest.raises(ValueError, match="unknown SFTConfig field"):
        sft_config_from_dict({"steps": 3})


def test_grpo_preset_flag_on_the_command_line(tmp_path, capsys):
    from fixrl.harness.cli import main

    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", "m", "--suite", "s", "--preset", "dapo",
                 "--print-config"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["preset"], printed["loss_type"]) == ("dapo", "dapo")
    assert main(["grpo", "--out", str(tmp_path / "r"), "--model", "m", "--suite", "s", "--preset", "nope"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
