"""VLLMPolicy: assistant turns sampled by a vLLM server, token ids in and token ids out.

Each turn POSTs the episode's exact token ids as the prompt to `/v1/completions` (no chat
rendering on the server: the agent loop owns the template, so what was sampled is what the
trajectory holds and what the trainer scores), and records the returned token ids and the
sampler's log-prob of each (`--logprobs-mode processed_logprobs`: after temperature and top-p).
Turn ends are the loop's as with `HFPolicy`: only `<|im_end|>` stops a turn (`stop_token_ids`,
`ignore_eos`), a reply cut at `max_tokens` comes back unstopped; the tool call is parsed from
these tokens by the same code (`harness.agent.chat.parse_tool_calls`, in the loop).

Sampling is seeded per request from the episode's seed and its turn number, so an episode's
tokens do not depend on which other requests share the server's batch -- as far as vLLM's
kernels are batch-invariant, which on CPU and GPU they are not guaranteed to be (a different
batch may round a logit differently and flip a near-tie). That is where a vLLM run's results may
depend on timing; `HFPolicy` in lockstep has no such dependence on CPU.

The LoRA adapter is hot-swapped, not the weights: `load_adapter(dir)` loads a peft adapter
directory under a new name (`/v1/load_lora_adapter`) and the following requests name it; the
previous adapter is unloaded. `version` is the name of what samples now (`base` or
`adapter-N`); each `Generation` carries it, so a trajectory records which adapter sampled it.

`concurrent = True` tells the agent loop that this policy serves one episode per call from many
threads at once (continuous batching happens on the server), so episodes need not wait for each
other (`harness.agent.async_loop`).

What it does not guarantee: full fine-tuning (new base weights) is not synced -- the trainer
refuses `--engine vllm` with `--full-finetune`, since reloading a checkpoint means restarting the
server (one to two minutes a step here).
"""
from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer

from fixrl.harness.agent.chat import end_of_turn_id
from fixrl.harness.agent.policies import Generation, GenRequest, check_sampling
from fixrl.harness.agent.policies.vllm_server import ServerSpec, VLLMServer, VLLMServerError, request_json
from fixrl.harness.model.dirs import check_adapter_dir, check_model_dir
from fixrl.tasks import Task

BASE = "base"
"""`version` of the base model (no adapter)."""


@dataclass
class _EpisodeState:
    seed: int
    turn: int = 0


class VLLMPolicy:
    """A policy whose turns a vLLM server samples (see the module docstring).

    Give `url` to use a server someone else started (it must serve `model_path`'s checkpoint,
    with `--enable-lora` for adapters and `--logprobs-mode processed_logprobs` for the recorded
    log-probs to be the sampler's); otherwise `spec` starts one for this policy, stopped by
    `close()` (or the context manager)."""

    name = "vllm"
    concurrent = True

    def __init__(self, model_path: str | Path, adapter: str | Path | None = None, *, url: str | None = None,
                 spec: ServerSpec | None = None, temperature: float = 1.0, top_p: float = 1.0,
                 max_new_tokens: int = 256, greedy: bool = False, max_concurrency: int = 64,
                 request_timeout: float = 600.0) -> None:
        check_sampling(temperature, top_p, max_new_tokens)
        check_model_dir(model_path)
        self.model_path = str(model_path)
        self.temperature = 0.0 if greedy else float(temperature)
        self.top_p = float(top_p)
        self.max_new_tokens = int(max_new_tokens)
        self.greedy = bool(greedy) or self.temperature == 0.0
        self.request_timeout = request_timeout
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.eot_id = end_of_turn_id(self.tokenizer)
        self.name = f"{Path(model_path).name}@vllm"
        self._seed = 0
        self._lock = threading.Lock()
        self._loaded = 0
        self._tag = uuid.uuid4().hex[:8]
        self._threads = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="fixrl-vllm")
        self.server: VLLMServer | None = None
        try:
            if url is None:
                self.server = VLLMServer(spec or ServerSpec(model=self.model_path)).start()
                url = self.server.url
            self.url = url.rstrip("/")
            self.base, self.max_context = self._served_model()
            self.version = BASE
            self._model_name = self.base
            if adapter is not None:
                self.load_adapter(adapter)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ Policy protocol

    def seed(self, seed: int) -> None:
        self._seed = int(seed)

    def start(self, task: Task, env: Any, seed: int) -> _EpisodeState:
        return _EpisodeState(seed=int(seed))

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        """Every request at once (one HTTP call each, on this policy's threads): the server
        batches them. A lockstep caller gets them back in order."""
        if len(requests) == 1:
            return [self._one(requests[0])]
        return list(self._threads.map(self._one, requests))

    # ------------------------------------------------------------------ adapters

    def load_adapter(self, adapter: str | Path) -> str:
        """Serve a peft adapter directory from now on; returns its version name. The previous
        adapter is unloaded (requests already sent finish with it)."""
        check_adapter_dir(adapter)
        with self._lock:
            self._loaded += 1
            version = f"adapter-{self._loaded}"
            # The server's name is unique to this policy: several runs may share one server.
            name = f"{version}-{self._tag}"
            request_json(self.url + "/v1/load_lora_adapter",
                         {"lora_name": name, "lora_path": str(Path(adapter).resolve())}, timeout=self.request_timeout)
            old, self._model_name, self.version = self._model_name, name, version
        if old != self.base:
            self._unload(old)
        return version

    def _unload(self, name: str) -> None:
        try:
            request_json(self.url + "/v1/unload_lora_adapter", {"lora_name": name}, timeout=self.request_timeout)
        except VLLMServerError:
            pass  # an adapter left loaded costs the server memory, not correctness

    def close(self) -> None:
        """Stop this policy's threads and the server it started (not a server given by URL)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        if self.server is None and getattr(self, "_model_name", None) not in (None, getattr(self, "base", None)):
            self._unload(self._model_name)  # a shared server keeps serving others
            self._model_name = self.base
        if self.server is not None:
            self.server.close()
            self.server = None

    def __enter__(self) -> VLLMPolicy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _served_model(self) -> tuple[str, int | None]:
        """(the served base model's name, its context length in tokens when the server says)."""
        models = request_json(self.url + "/v1/models", timeout=30)
        try:
            first = models["data"][0]
            length = first.get("max_model_len")
            return str(first["id"]), int(length) if length else None
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            raise VLLMServerError(f"{self.url}/v1/models: no model listed ({models!r:.300})") from None

    def _one(self, req: GenRequest) -> Generation:
        if not req.prompt_ids:
            raise ValueError("empty prompt")
        state = req.state if isinstance(req.state, _EpisodeState) else _EpisodeState(seed=self._seed)
        turn = state.turn
        state.turn += 1
        cap = max(1, min(req.max_new_tokens, self.max_new_tokens))
        if self.max_context is not None:  # the loop keeps prompt + cap within it (its token budget)
            cap = max(1, min(cap, self.max_context - len(req.prompt_ids)))
        with self._lock:
            model, version = self._model_name, self.version
        payload = {
            "model": model, "prompt": list(req.prompt_ids), "max_tokens": cap,
            "temperature": self.temperature, "top_p": self.top_p, "top_k": -1, "min_p": 0.0,
            "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
            "seed": (state.seed * 1_000_003 + turn) & 0x7FFFFFFF, "logprobs": 0,
            "stop_token_ids": [self.eot_id], "ignore_eos": True, "skip_special_tokens": False,
            "include_stop_str_in_output": True, "return_token_ids": True,
        }
        answer = request_json(self.url + "/v1/completions", payload, timeout=self.request_timeout, retries=2)
        try:
            choice = answer["choices"][0]
            ids = [int(t) for t in choice["token_ids"]]
            lps = [float(x) for x in choice["logprobs"]["token_logprobs"]]
        except (TypeError, KeyError, IndexError, ValueError):
            raise VLLMServerError(f"{self.url}/v1/completions: unexpected answer ({answer!r:.500})") from None
        if len(lps) != len(ids):
            raise VLLMServerError(f"{self.url}: {len(lps)} log-probs for {len(ids)} tokens")
        stopped = bool(ids) and ids[-1] == self.eot_id
        if self.eot_id in ids[:-1]:  # a stop token is the end of the turn, wherever it comes
            j = ids.index(self.eot_id)
            ids, lps, stopped = ids[:j + 1], lps[:j + 1], True
        return Generation(token_ids=ids, logprobs=lps, stopped=stopped, version=version)
