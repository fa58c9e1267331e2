"""Isolation backends."""
from sandbox.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxError
