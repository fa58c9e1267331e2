"""The records jobs nest for their episodes: one `EpisodeSettings` in the rollout, eval and probe
configs, and Ray's fields as a `ClusterConfig` beside the sandbox -- read from the flags as before,
and from configs and run directories written when they were `sandbox.ray*`."""
from __future__ import annotations

import json

import pytest

from fixrl.evals.probe import ProbeConfig
from fixrl.evals.run import EvalConfig
from fixrl.harness.agent.rollouts import RolloutConfig
from fixrl.harness.agent.settings import ClusterConfig, EpisodeSettings, split_legacy_sandbox
from fixrl.harness.cli import build_parser, main
from fixrl.harness.cli.flags import config_from_flags
from fixrl.sandbox import SandboxConfig
from fixrl.train.config import GRPOConfig
from fixrl.train.resolve import RESUMABLE_OVERRIDES, dotted_names, load_config


@pytest.mark.parametrize("command,cls", [("rollout", RolloutConfig), ("eval", EvalConfig), ("probe", ProbeConfig)])
def test_one_record_of_episode_settings_from_the_same_flags(command, cls):
    args = build_parser().parse_args([command, "--model", "m", "--adapter", "a", "--max-turns", "3", "--pool-size", "2",
                                      "--backend", "docker", "--ray", "auto", "--ray-retries", "4",
                                      "--max-total-tokens", "900", "--temperature", "0.5"])
    cfg = config_from_flags(args, cls)
    assert isinstance(cfg.episode, EpisodeSettings)
    ep = cfg.episode
    assert (ep.policy.model, ep.policy.adapter, ep.policy.temperature) == ("m", "a", 0.5)
    assert ep.env.max_turns == 3 and ep.max_total_tokens == 900
    assert ep.sandbox == SandboxConfig(backend="docker", pool_size=2)
    assert ep.cluster == ClusterConfig("auto", retries=4)
    # what was not given keeps the record's defaults
    default = cls().episode
    assert ep.env.max_edits == default.env.max_edits and ep.policy.top_p == default.policy.top_p


def test_a_config_written_with_sandbox_ray_loads(tmp_path):
    saved = GRPOConfig(model="m", suite="s", out=str(tmp_path)).to_dict()
    del saved["cluster"]
    saved["sandbox"].update(ray="10.0.0.1:6379", ray_retries=5, ray_call_margin=7.5)   # as a run of an earlier version
    (tmp_path / "config.json").write_text(json.dumps(saved))
    cfg = load_config(tmp_path / "config.json", **{"sandbox.ray": "auto"})   # a resume override, old name
    assert cfg.cluster == ClusterConfig("auto", retries=5, call_margin=7.5)
    assert cfg.sandbox == SandboxConfig(**{k: saved["sandbox"][k] for k in ("backend", "image", "pool_size")})
    assert json.loads(json.dumps(cfg.to_dict()))["cluster"]["address"] == "auto"
    assert set(dotted_names({"sandbox": {"ray": "auto", "ray_retries": 1}})) <= set(RESUMABLE_OVERRIDES)
    assert split_legacy_sandbox({"ray": "x", "pool_size": 2}, {"retries": 1}) == ({"pool_size": 2},
                                                                                 {"address": "x", "retries": 1})


def test_old_dotted_names_and_the_flag_names_set_the_cluster(tmp_path, capsys):
    common = ["grpo", "--model", "m", "--suite", "s", "--out", str(tmp_path / "r"), "--print-config"]
    for extra in (["--set", "sandbox.ray=auto"], ["--set", "ray=auto"], ["--set", "cluster.address=auto"],
                  ["--ray", "auto"]):
        assert main([*common, *extra]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["cluster"]["address"] == "auto" and "ray" not in printed["sandbox"], extra


def test_the_demo_carries_its_cluster_into_grpo():
    from fixrl.harness.demo.config import DemoConfig

    cfg = DemoConfig(cluster=ClusterConfig("auto", retries=3))
    assert cfg.grpo.cluster == ClusterConfig("auto", retries=3)
    assert build_parser().parse_args(["demo", "--ray", "HOST:1"]).ray == "HOST:1"
