"""Building the base sandbox image without a registry: debootstrap a minimal Debian with
python3 and pytest, then `docker import` it. Cached by tag."""
from __future__ import annotations

import logging
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

from fixrl.sandbox.base import SandboxError
from fixrl.sandbox.docker import DockerSandbox, client

log = logging.getLogger(__name__)

PACKAGES = ("python3", "python3-pytest", "python-is-python3")
SUITE = "bookworm"


def image_exists(tag: str) -> bool:
    import docker.errors  # noqa: PLC0415 - the docker SDK only for the Docker backend


    try:
        client().images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def build_image(tag: str, force: bool = False, mirror: str | None = None,
                packages: tuple[str, ...] = PACKAGES) -> bool:
    """Build `tag` unless it exists (or `force`). Returns True when it built one.
    Raises SandboxError with what to do when a tool or the daemon is missing."""

    c = client()  # a clear error first if the daemon is not there
    if not force and image_exists(tag):
        log.info("image %s exists (use --force to rebuild)", tag)
        return False
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap not found: install it (`apt-get install debootstrap`, "
                           "which `make docker` does) to build the sandbox image")
    if os.geteuid() != 0:
        raise SandboxError("debootstrap needs root: run `sudo fixrl sandbox build-image` "
                           "(or `make image` as root)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fixrl-image-") as tmp:
        root = os.path.join(tmp, "rootfs")
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE, root]
        if mirror:
            cmd.append(mirror)
        log.info("running %s (about a minute)", " ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SandboxError(f"debootstrap failed (exit {r.returncode}); last lines:\n"
                               + "\n".join((r.stdout + r.stderr).splitlines()[-15:])
                               + "\n(check the Debian mirror is reachable, or pass --mirror URL)")
        tarball = os.path.join(tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", root, "-cf", tarball, "."], check=True)
        log.info("importing %s as %s", tarball, tag)
        repo, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        c.api.import_image_from_file(tarball, repository=repo, tag=version)
    if not image_exists(tag):
        raise SandboxError(f"docker import finished but image {tag} is missing")
    log.info("built %s in %.0f s", tag, time.monotonic() - start)
    return True


def verify_image(tag: str) -> str:
    """Run `python -m pytest --version` in a sandbox of the image; returns its output."""


    with tempfile.TemporaryDirectory() as ws, DockerSandbox(pathlib.Path(ws), image=tag) as sb:
        r = sb.exec("python --version && python -m pytest --version", timeout=60)
    if r.exit_code != 0:
        raise SandboxError(f"image {tag} lacks python or pytest:\n{r.output}")
    return r.output.strip()
