"""The tool environment: tools and their schemas, budgets, the end of an episode, and the
reward (the hidden check on a fresh copy with the agent's changes)."""
from envs.env import EnvConfig, ToolEnv, episode_env
from envs.tools import Tool, ToolError, register_tool
from envs.types import EpisodeInfo, ExitStatus, Malformed, Outcome, StepResult, ToolCall

__all__ = ["EnvConfig", "ToolEnv", "episode_env", "Tool", "ToolError", "register_tool",
           "EpisodeInfo", "ExitStatus", "Malformed", "Outcome", "StepResult", "ToolCall"]
