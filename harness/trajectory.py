"""The trajectory: exactly the tokens the policy was given and sampled, never re-tokenised."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Trajectory:
    task_id: str
    token_ids: list[int] = field(default_factory=list)
    """Prompt, then each assistant turn's sampled ids (through <|im_end|>), then each tool turn's ids."""
    assistant_mask: list[int] = field(default_factory=list)
    """1 exactly where the policy sampled the token; same length as token_ids."""
    sampler_logprobs: list[float] = field(default_factory=list)
    """Sampler's log-prob of each token (0.0 where assistant_mask is 0); empty for scripted policies."""
    turn_spans: list[tuple[int, int]] = field(default_factory=list)
    """[start, end) of each assistant turn's sampled ids within token_ids."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The conversation as chat messages (for reading, SFT export and the token-exactness test).
    Assistant messages hold the decoded sampled text verbatim (the tool call as written, not a
    parsed `tool_calls` field), so the chat template renders exactly the ids that were sampled."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool schemas the prompt listed (OpenAI function format); render with
    `apply_chat_template(messages, tools=tools)`."""
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    """envs.EpisodeInfo as a dict: actions, reads/tests/edits, turns, submitted, hidden_pass,
    exit_status, outcome ('pass' | 'fail' | 'error'), error, ..."""
    group: int | None = None
    """Index of the GRPO group the trajectory belongs to (None outside training)."""

    @property
    def errored(self) -> bool:
        return self.info.get("outcome") == "error"

    @property
    def num_policy_tokens(self) -> int:
        return sum(self.assistant_mask)

    def with_masked(self, spans: list[tuple[int, int]]) -> "Trajectory":
        """A copy with the given [start, end) token spans out of the loss (assistant_mask 0,
        sampler log-prob 0.0): SFT data that shows the model a context without teaching every
        token that made it (e.g. the choice of a tool, but not its arguments)."""
        mask, logprobs = list(self.assistant_mask), list(self.sampler_logprobs)
        for start, end in spans:
            mask[start:end] = [0] * (end - start)
            if logprobs:
                logprobs[start:end] = [0.0] * (end - start)
        return dataclasses.replace(self, assistant_mask=mask, sampler_logprobs=logprobs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trajectory":
        d = dict(d)
        d["turn_spans"] = [tuple(s) for s in d.get("turn_spans", [])]
        return cls(**d)
