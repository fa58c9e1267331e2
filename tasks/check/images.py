"""check_images: a task's `image:` refused up front on a backend that cannot honour it.

The local backend runs this machine's own programs; a task that needs its image's programs
(another Python, a library installed there) would run its check without them and fail, an
all-fail reward that looks like a policy's. Does not check that the image exists (Docker does,
when the first sandbox starts)."""
from __future__ import annotations

from collections.abc import Sequence

from fixrl.sandbox import SandboxConfigError
from fixrl.sandbox.factory import image_unsupported
from fixrl.tasks.format.schema import Task


def image_problem(task: Task, backend: str) -> str | None:
    """Why `backend` cannot run `task` (its task file and the fix named); None when it can."""
    why = image_unsupported(backend, task.image)
    return f"{task.source_file or task.id}: `image: {task.image}`: {why}" if why else None


def check_images(tasks: Sequence[Task], backend: str) -> None:
    """SandboxConfigError naming the first task whose image `backend` cannot honour."""
    for task in tasks:
        why = image_problem(task, backend)
        if why:
            raise SandboxConfigError(why)
