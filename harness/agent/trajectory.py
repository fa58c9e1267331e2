"""The trajectory: exactly the tokens the policy was given and sampled, never re-tokenised."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from fixrl.envs.types import EpisodeInfo


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
    info: EpisodeInfo = None  # type: ignore[assignment]  # set in __post_init__
    """What happened in the episode (actions, counts, outcome 'pass' | 'fail' | 'error', error,
    sample, seed, cut_turns, ...). A dict is accepted and converted (files, older callers)."""
    group: int | None = None
    """Index of the GRPO group the trajectory belongs to (None outside training)."""
    policy_versions: list[str] = field(default_factory=list)
    """Which weights sampled its turns, in order of first use (a vLLM server's adapter names:
    `base`, `adapter-N`); empty for a policy whose weights cannot change under it."""

    def __post_init__(self) -> None:
        if self.info is None:
            self.info = EpisodeInfo(task_id=self.task_id)
        elif isinstance(self.info, dict):
            self.info = EpisodeInfo.from_dict({"task_id": self.task_id, **self.info})

    @property
    def errored(self) -> bool:
        return self.info.outcome == "error"

    @property
    def num_policy_tokens(self) -> int:
        return sum(self.assistant_mask)

    def with_masked(self, spans: list[tuple[int, int]]) -> Trajectory:
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
        d = dataclasses.asdict(dataclasses.replace(self, info=EpisodeInfo(task_id=self.task_id)))
        d["info"] = self.info.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        """Inverse of `to_dict`; files written when `info` was a plain dict load the same."""
        d = dict(d)
        d["turn_spans"] = [tuple(s) for s in d.get("turn_spans", [])]
        d["info"] = EpisodeInfo.from_dict({"task_id": d.get("task_id", ""), **(d.get("info") or {})})
        return cls(**d)
