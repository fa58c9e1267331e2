"""What the command line says when something goes wrong: every layer's own error, mapped in one
place to one line on stderr and an exit status.

- 2: bad input (a flag, a file, a config field, a suite, a model directory); the message names it
  and says what to do. Each layer raises its own error class for these; commands let them pass.
- 3: a sandbox failed (the Docker daemon gone, a container killed, an image not built): an
  infrastructure failure, not the user's input; retry, or check the backend.
- 130: interrupted (Ctrl-C); runs that checkpoint have saved before exiting, an eval has written
  the episodes that finished.
"""
from __future__ import annotations

from fixrl.evals.report import ReportError
from fixrl.evals.run import EvalError
from fixrl.harness.agent.loop import TemplateError
from fixrl.harness.agent.policies import PolicyError
from fixrl.harness.bench.errors import BenchError
from fixrl.harness.model.precision import PrecisionError
from fixrl.harness.view import ViewError
from fixrl.sandbox import SandboxConfigError, SandboxError
from fixrl.sandbox.environment import EnvBuildError
from fixrl.tasks.format.loader import TaskError
from fixrl.tasks.generate.config import GenerateError
from fixrl.train.errors import DataError, ModelError, RunError


class UserError(Exception):
    """Bad input found by the command line itself (flags that do not go together, a missing file)."""


INPUT_ERRORS: tuple[type[BaseException], ...] = (
    UserError, SandboxConfigError, EnvBuildError, TaskError, GenerateError, PolicyError, TemplateError, BenchError,
    ModelError, RunError, DataError, EvalError, ReportError, PrecisionError, ViewError)
"""Each layer's bad-input errors (exit status 2)."""


def describe(error: BaseException) -> tuple[str, int] | None:
    """(the line to print, the exit status) for an error the command line reports; None for a bug
    (its traceback is shown)."""
    if isinstance(error, INPUT_ERRORS):
        return f"fixrl: error: {error}", 2
    if isinstance(error, SandboxError):
        return (f"fixrl: sandbox failure: {error} (an infrastructure failure, not a verdict: retry, or check the "
                f"backend, e.g. `docker info` for --backend docker)"), 3
    if isinstance(error, KeyboardInterrupt):
        return "fixrl: interrupted", 130
    return None
