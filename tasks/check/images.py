"""check_images: a task's `image:` refused up front on a backend that cannot honour it.

The local backend runs this machine's own programs; a task that needs its image's programs
(another Python, a library installed there) would run its check without them and fail, an
all-fail reward that looks like a policy's. An image the Docker daemon lacks is said once, up
front, rather than by every sandbox and its retries; one removed during a run is not."""
from __future__ import annotations

from collections.abc import Sequence

from fixrl.sandbox import SandboxConfigError
from fixrl.sandbox.factory import image_unsupported, require_images
from fixrl.tasks.format.schema import Task


def image_problem(task: Task, backend: str) -> str | None:
    """Why `backend` cannot run `task` (its task file and the fix named); None when it can."""
    why = image_unsupported(backend, task.image)
    return f"{task.source_file or task.id}: `image: {task.image}`: {why}" if why else None


def check_images(tasks: Sequence[Task], backend: str, image: str | None = None, *, present: bool = True) -> None:
    """SandboxConfigError naming the first task whose image `backend` cannot honour; with
    `present`, SandboxError for an image (`image` over the tasks' own) the Docker daemon lacks."""
    for task in tasks:
        why = image_problem(task, backend)
        if why:
            raise SandboxConfigError(why)
    if present:
        require_images(backend, {image or task.image for task in tasks} or {image})
