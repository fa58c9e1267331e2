"""open_sandbox: the one place a backend name becomes a sandbox."""
from __future__ import annotations

from pathlib import Path

from fixrl.sandbox.base import DEFAULT_IMAGE, Limits, Sandbox, SandboxConfigError
from fixrl.sandbox.docker import DockerSandbox
from fixrl.sandbox.environment import env_python, is_env_tag
from fixrl.sandbox.local import LocalSandbox

BACKENDS = ("local", "docker")


def image_unsupported(backend: str, image: str | None) -> str | None:
    """Why `backend` cannot honour `image` (None: it can, or there is no image). The local
    backend runs the machine's own programs: silently ignoring an image would score every check
    that needs the image's programs as failed."""
    if image and backend != "docker" and not is_env_tag(image):
        return (f"the {backend} backend runs this machine's own programs and cannot use a Docker image; "
                "run with --backend docker (or drop the image)")
    return None


def require_images(backend: str, images: set[str | None]) -> None:
    """SandboxError (how to build it) for the first of `images` (None: the base image) that the
    Docker daemon lacks; nothing for another backend. Run once before a job's sandboxes start, so
    that a missing image is said once instead of failing (and being retried) in every sandbox."""
    if backend != "docker":
        return
    from fixrl.sandbox.docker import require_image  # noqa: PLC0415 - the docker SDK only for the Docker backend
    from fixrl.sandbox.image import require_base_image  # noqa: PLC0415 - likewise

    for image in sorted({i or DEFAULT_IMAGE for i in images}):
        require_image(image)
    require_base_image(DEFAULT_IMAGE)  # a base image of another recipe would score checks differently


def open_sandbox(workspace: Path, backend: str = "local", image: str | None = None,
                 limits: Limits | None = None) -> Sandbox:
    """A new sandbox holding a copy of `workspace` at WORKDIR. `image`: the Docker image
    (default DEFAULT_IMAGE), or an environment's tag (sandbox.environment), which the local
    backend runs as that environment's interpreter (any other image it refuses).
    Raises SandboxError with what to do when it cannot start."""
    why = image_unsupported(backend, image)
    if why:
        raise SandboxConfigError(f"image {image}: {why}")
    if backend == "local":
        python = env_python(image) if image is not None and is_env_tag(image) else None
        return LocalSandbox(Path(workspace), limits, python=python)
    if backend == "docker":
        return DockerSandbox(Path(workspace), image=image or DEFAULT_IMAGE, limits=limits)
    raise ValueError(f"unknown sandbox backend {backend!r}: use one of {', '.join(BACKENDS)}")
