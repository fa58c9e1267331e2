"""SandboxPool: n sandboxes used concurrently and reused across episodes.

    with SandboxPool(8, backend="docker") as pool:
        with pool.acquire(workspace) as sb:   # a fresh or reset sandbox holding `workspace`
            sb.exec("python -m pytest -q")

Reuse is a `reset(workspace)` (no new container). A sandbox that raised SandboxError, from
any method and whether or not the caller caught it, is closed and replaced, never reused.
Thread-safe: episodes acquire and release from worker threads.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ContextManager, Iterator

from fixrl.sandbox.base import Limits, Sandbox, SandboxConfigError, SandboxError
from fixrl.sandbox.environment import env_python, is_env_tag
from fixrl.sandbox.factory import image_unsupported, open_sandbox
from fixrl.sandbox.forking import ForkingSandbox

log = logging.getLogger(__name__)


class _Tracked:
    """The sandbox handed to a caller: records whether the sandbox itself failed."""

    def __init__(self, sb: Sandbox):
        self._sb = sb
        self.broken = False

    def _call(self, name: str, *args, **kwargs):
        try:
            return getattr(self._sb, name)(*args, **kwargs)
        except SandboxError:
            self.broken = True
            raise

    def exec(self, cmd: str, timeout: float = 60.0):
        return self._call("exec", cmd, timeout)

    def read_file(self, path: str) -> str:
        return self._call("read_file", path)

    def write_file(self, path: str, content: str) -> None:
        return self._call("write_file", path, content)

    def changed_files(self) -> dict[str, str | None]:
        return self._call("changed_files")

    def reset(self, workspace: Path | None = None) -> None:
        return self._call("reset", workspace)

    def close(self) -> None:
        # Closing is the pool's job; a caller closing its lease marks it for replacement.
        self.broken = True

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def __getattr__(self, name):  # backend-specific attributes (isolation, container, ...)
        return getattr(self._sb, name)

    def __repr__(self) -> str:
        return f"pooled {self._sb!r}"


class SandboxPool:
    def __init__(self, size: int, backend: str = "local", image: str | None = None,
                 limits: Limits | None = None, acquire_timeout: float = 900.0, forking: bool = False):
        """forking: hold ForkingSandboxes (local backend; see sandbox.forking)."""
        if size < 1:
            raise ValueError(f"SandboxPool size must be >= 1, got {size}")
        self.size = size
        self.backend = backend
        self.image = image
        self.limits = limits
        self.acquire_timeout = acquire_timeout
        """Seconds acquire() waits for a free sandbox before raising SandboxError."""
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[tuple[str | None, Sandbox]] = []
        self._closed = False
        if forking and backend != "local":
            raise ValueError(f"forking sandboxes are local ones, not {backend!r}")
        self.forking = forking
        self._checks: SandboxPool | None = None
        self.created = 0
        """Sandboxes started so far (a measure of reuse)."""
        self.replaced = 0
        """Sandboxes discarded after a SandboxError."""

    def _key(self, image: str | None) -> str | None:
        """What makes two sandboxes interchangeable: the image (Docker) or the environment
        (local: any other image name means fixrl's own interpreter)."""
        if self.backend == "local" and not is_env_tag(image):
            return None
        return image

    def _open(self, workspace: Path, image: str | None) -> Sandbox:
        if self.forking:
            python = env_python(image) if image is not None and is_env_tag(image) else None
            sb = ForkingSandbox(workspace, self.limits, python=python)
        else:
            sb = open_sandbox(workspace, backend=self.backend, image=image, limits=self.limits)
        with self._lock:
            self.created += 1
        return sb

    def _take(self, workspace: Path, image: str | None) -> Sandbox:
        with self._lock:
            for i, (img, idle) in enumerate(self._idle):
                if self._key(img) == self._key(image):
                    sb: Sandbox | None = idle
                    del self._idle[i]
                    break
            else:
                sb = None
                if len(self._idle) >= self.size:  # idle ones of another image: make room
                    _, old = self._idle.pop(0)
                    threading.Thread(target=old.close, daemon=True).start()
        if sb is not None:
            try:
                sb.reset(workspace)
                return sb
            except SandboxError as e:
                log.warning("discarding a pooled sandbox that failed to reset: %s", e)
                with self._lock:
                    self.replaced += 1
                _close_quietly(sb)
        return self._open(workspace, image)

    @contextlib.contextmanager
    def acquire(self, workspace: Path, image: str | None = None) -> Iterator[Sandbox]:
        """A sandbox holding `workspace` (and `image`, Docker only; default: the pool's),
        returned to the pool on exit; replaced instead when the sandbox itself failed."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        image = image or self.image
        why = image_unsupported(self.backend, image)
        if why:   # before a sandbox is reused: an idle local one would take any image
            raise SandboxConfigError(f"image {image}: {why}")
        if not self._slots.acquire(timeout=self.acquire_timeout):
            raise SandboxError(f"no free sandbox in the pool after {self.acquire_timeout:.0f} s "
                               f"(size {self.size}): raise the pool size or release sandboxes")
        try:
            sb = self._take(Path(workspace), image)
            lease = _Tracked(sb)
            try:
                yield lease
            except SandboxError:
                lease.broken = True
                raise
            finally:
                with self._lock:
                    keep = not lease.broken and not self._closed
                    if keep:
                        self._idle.append((image, sb))
                    elif lease.broken:
                        self.replaced += 1
                if not keep:
                    _close_quietly(sb)
        finally:
            self._slots.release()

    def check_sandbox(self, workspace: Path, image: str | None = None) -> ContextManager[Sandbox]:
        """A sandbox to judge `workspace` in (a hidden check), never one an agent has used.
        Local backend: one of a second pool, of ForkingSandboxes kept for checks only, whose
        interpreter has pytest imported between checks (sandbox.forking); Docker: a new
        container. Used as `with pool.check_sandbox(ws) as sb:`."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        if self.backend != "local":
            return open_sandbox(Path(workspace), backend=self.backend, image=image or self.image,
                                limits=self.limits)
        return self._check_pool().acquire(workspace, image=image or self.image)

    def _check_pool(self) -> SandboxPool:
        # Checks are CPU-bound: more of them at once than about twice the cores only adds
        # interpreters (30 MB each) and start-ups.
        with self._lock:
            if self._checks is None:
                size = min(self.size, max(2, 2 * (os.cpu_count() or 1)))
                self._checks = SandboxPool(size, limits=self.limits, forking=True,
                                           acquire_timeout=self.acquire_timeout)
            return self._checks

    def warm(self, workspace: Path, image: str | None = None, check_prelude: str | None = None) -> int:
        """Start sandboxes (in parallel) until the pool holds `size` idle ones, so the first
        episodes do not pay for start-up; returns how many were started. `workspace` is any
        directory to start them on (each acquire resets to its own). With `check_prelude`
        (tasks.check.run.PRELUDE), the local backend's check sandboxes are started too, their
        interpreters having run it."""
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        if check_prelude is not None and self.backend == "local":
            checks = self._check_pool()
            checks.warm(workspace, image or self.image)
            with checks._lock:
                idle = [sb for _, sb in checks._idle]
            for sb in idle:
                if sb.forking:
                    sb.start(check_prelude)
        image = image or self.image
        with self._lock:
            missing = self.size - len(self._idle)
        if missing <= 0:
            return 0

        with ThreadPoolExecutor(max_workers=min(missing, 8)) as ex:
            opened = list(ex.map(lambda _: self._open(Path(workspace), image), range(missing)))
        with self._lock:
            self._idle.extend((image, sb) for sb in opened)
        return len(opened)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            checks, self._checks = self._checks, None
        for _, sb in idle:
            _close_quietly(sb)
        if checks is not None:
            checks.close()

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _close_quietly(sb: Sandbox) -> None:
    try:
        sb.close()
    except Exception as e:  # closing a broken sandbox must not hide the original error
        log.warning("closing sandbox failed: %s", e)
