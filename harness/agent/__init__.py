"""The agent loop: chat format, policies, token-exact rollouts behind the `Rollouts` seam.

- `chat`: prompts from the chat template, `parse_tool_calls`, `format_tool_call`.
- `policies`: the batched `Policy` protocol, `PolicyConfig`, `HFPolicy`, `ScriptedPolicy`, `load_policy`.
- `loop`: `run_episodes`, the lockstep loop: generation, tokens, trajectories (any environment side).
- `envside`: the `EnvSide` Protocol the loop drives (sandboxes, tool calls, checks behind futures).
- `rollouts`: the seam: the `Rollouts` Protocol, `open_rollouts`, `RolloutConfig` (`fixrl rollout`).
- `settings`: `EpisodeSettings` (policy, env, sandbox, cluster, token budget; shared by the
  rollout, eval and probe configs) and `ClusterConfig` (which Ray cluster, if any).
- `local_rollouts`: `LocalRollouts` and `LocalEnvSide`, the seam in one process over a sandbox pool.
- `ray/`: `RayRollouts`, the seam over a Ray cluster (the `fixrl[ray]` extra; imported only for `--ray`).
- `trajectory`: the `Trajectory` record; `transcript`: printing and JSONL.
- `bench_rollout`, `bench_ray`: the rollout benchmarks (`fixrl bench rollout`).

Model loading, precision and the tiny checkpoint are `fixrl.harness.model`, the layer below.
"""
