"""The agent loop: chat format, policies, token-exact rollouts behind the `Rollouts` seam.

- `tiny`: `init_tiny(path)`, a tiny Qwen2 checkpoint with Qwen2.5's tokenizer and chat
  template; `qwen25_tokenizer()`; `make_tiny_suite(dir)` for tests and benchmarks.
- `chat`: prompts from the chat template, `parse_tool_calls`, `format_tool_call`.
- `policies`: the batched `Policy` protocol, `HFPolicy`, `ScriptedPolicy`, `load_policy`.
- `rollouts`: the `Rollouts` Protocol and `LocalRollouts` (one process, a sandbox pool).
- `rollout`: `run_episodes`, the lockstep loop behind `LocalRollouts`.
- `trajectory`: the `Trajectory` record; `transcript`: printing and JSONL.
"""
