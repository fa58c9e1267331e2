"""The tool environment: tools and their schemas, budgets, renaming, the end of an episode and
its record; the reward it asks for at the end is `tasks.check.reward` (the hidden check on a
fresh copy with the agent's changes).

    from fixrl.envs import EnvConfig, ToolCall, episode_env
    with episode_env(task, EnvConfig(rename=True, max_edits=1), suite) as env:
        messages, tools = env.reset()          # system + issue; OpenAI-format tool schemas
        env.step(ToolCall("read", {"path": "pkg/core.py"}))
        ...
        reward, info = env.finish()            # info.outcome: pass | fail | error

The harness builds `ToolEnv(task, sandbox, config, suite=...)` over a pooled sandbox itself;
`envs.scripted` has the oracle / blind / random plans; `envs.tools.register_tool` adds tools.
"""
from fixrl.envs.env import EnvConfig, ToolEnv, episode_env
from fixrl.envs.tools import Tool, ToolError, register_tool
from fixrl.envs.types import EpisodeInfo, ExitStatus, Malformed, Outcome, StepResult, ToolCall

__all__ = ["EnvConfig", "ToolEnv", "episode_env", "Tool", "ToolError", "register_tool",
           "EpisodeInfo", "ExitStatus", "Malformed", "Outcome", "StepResult", "ToolCall"]
