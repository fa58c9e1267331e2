"""The agent loop and the `fixrl` command line.

- `harness.tiny`: `init_tiny(path)`, a tiny Qwen2 checkpoint with Qwen2.5's tokenizer and chat
  template; `qwen25_tokenizer()`; `make_tiny_suite(dir)` for tests and benchmarks.
- `harness.chat`: prompts from the chat template, `parse_tool_calls`, `format_tool_call`.
- `harness.policies`: the batched `Policy` protocol, `HFPolicy`, `ScriptedPolicy`, `load_policy`.
- `harness.rollout`: `run_episodes`, token-exact trajectories in lockstep over a sandbox pool.
- `harness.trajectory`: the `Trajectory` record; `harness.transcript`: printing and JSONL.
- `harness.excerpts`: informed episodes cut to a few lines of the read and the edit, the demo's
  first SFT stage; `harness.demo`: `fixrl demo`.
"""
