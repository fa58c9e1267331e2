"""Building the base sandbox image without a registry: debootstrap a minimal Debian with python3
and CPython's own test package, install fixrl's pinned pytest (and its dependencies) into it
offline, compile their bytecode, then `docker import` it.

What the image has, and why:
- Debian's `python3` (the same major.minor as the interpreter running fixrl: environment layers
  install wheels resolved for fixrl's interpreter; checked at build time);
- `libpython3.X-testsuite`: CPython's `test` package (`test.support.import_helper`,
  `os_helper`, ...), which the local backend's interpreter has and some libraries' tests import;
- pytest at the versions fixrl itself runs (`pytest_pins`: pytest and its runtime
  dependencies, as installed with fixrl), downloaded as wheels on the host and installed into
  `/usr/lib/python3/dist-packages` (not Debian's older python3-pytest): a test is collected and
  reported the same on both backends. An environment layer (`sandbox.environment`) that pins
  another pytest installs it in `/usr/local/lib/python3.X/dist-packages`, which comes first on
  `sys.path`, so the layer's pytest wins whole.

The image carries the label `fixrl.recipe`: a hash of all of that (`recipe`). `build_image`
rebuilds an image whose label differs from the current recipe, and `require_base_image` refuses
to run sandboxes of a stale one, so a changed recipe never silently keeps the old image.
Environment layers record the base image's id (`fixrl.base`) and are rebuilt when it changes.

Not guaranteed: Debian's packages are whatever the mirror serves for the suite when the image
is built (the recipe names packages, not their Debian versions).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata

from fixrl.sandbox.base import DEFAULT_IMAGE, SandboxError
from fixrl.sandbox.docker import DockerSandbox, client

log = logging.getLogger(__name__)

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
"""The image's Python: the interpreter running fixrl's (bookworm has 3.11)."""
PACKAGES = ("python3", "python-is-python3", f"libpython{PY}-testsuite")
"""Debian packages; pytest is not one of them (`pytest_pins`)."""
SUITE = "bookworm"
RECIPE_LABEL = "fixrl.recipe"
"""The image label holding `recipe()`'s hash."""
BASE_LABEL = "fixrl.base"
"""The label of an environment layer holding the id of the base image it was built on."""
PINNED_SITE = "/usr/lib/python3/dist-packages"
"""Where the pinned pytest goes: after `/usr/local/lib/python3.X/dist-packages` on sys.path."""
RECIPE_FORMAT = 3
"""Bumped when how the image is built changes in a way the other fields do not show."""


def pytest_pins(root: str = "pytest") -> tuple[str, ...]:
    """`name==version` of `root` and of every package it needs at runtime (no extras; markers
    evaluated for this interpreter, which is the image's Python version), as installed here."""
    from packaging.requirements import Requirement  # noqa: PLC0415 - pytest's own dependency

    pins: dict[str, str] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in pins:
            continue
        pins[key] = metadata.version(name)
        for text in metadata.requires(name) or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return tuple(sorted(f"{k}=={v}" for k, v in pins.items()))


def console_scripts(dist: str) -> dict[str, str]:
    """The commands of the installed `dist` (its console_scripts entry points), as scripts
    for the image's python3 (pip's own, with `--target`, would name this machine's python)."""
    out = {}
    for ep in metadata.distribution(dist).entry_points.select(group="console_scripts"):
        module, _, attr = ep.value.partition(":")
        out[ep.name] = f"#!/usr/bin/python3\nimport sys\nfrom {module} import {attr}\nsys.exit({attr}())\n"
    return out


def recipe(packages: tuple[str, ...] = PACKAGES, pins: tuple[str, ...] | None = None) -> str:
    """The hash of what goes into the image: suite, Debian packages, pinned wheels, format."""
    fields = {"suite": SUITE, "packages": sorted(packages), "pins": list(pins if pins is not None else pytest_pins()),
              "python": PY, "site": PINNED_SITE, "format": RECIPE_FORMAT}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _image(tag: str):
    import docker.errors  # noqa: PLC0415 - the docker SDK only for the Docker backend

    try:
        return client().images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def image_exists(tag: str) -> bool:
    return _image(tag) is not None


def image_label(tag: str, label: str) -> str | None:
    """`label` of the image `tag` (None: no such image or no such label)."""
    img = _image(tag)
    return None if img is None else (img.labels or {}).get(label)


def image_id(tag: str) -> str | None:
    img = _image(tag)
    return None if img is None else img.id


def remove_replaced(old_id: str | None, tag: str) -> None:
    """Remove the image `old_id` that a rebuild of `tag` replaced (now untagged), so rebuilds do
    not pile up on the disk. Best effort: an image a container still uses stays."""
    import docker.errors  # noqa: PLC0415 - the docker SDK only for the Docker backend

    if old_id is None or old_id == image_id(tag):
        return
    try:
        client().images.remove(old_id)
    except docker.errors.APIError as e:
        log.info("the replaced image %s of %s stays: %s", old_id[:19], tag, e)


def stale_reason(tag: str, packages: tuple[str, ...] = PACKAGES) -> str | None:
    """Why the existing image `tag` is not the current recipe's (None: it is, or is missing)."""
    img = _image(tag)
    if img is None:
        return None
    have, want = (img.labels or {}).get(RECIPE_LABEL), recipe(packages)
    if have == want:
        return None
    return (f"image {tag} was built from another recipe ({RECIPE_LABEL}={have or 'none'}, now {want}: "
            "its Debian packages, fixrl's pinned pytest or how it is built changed)")


def require_base_image(tag: str = DEFAULT_IMAGE) -> None:
    """SandboxError saying how to rebuild when `tag` exists but is not the current recipe's."""
    why = stale_reason(tag)
    if why:
        raise SandboxError(f"{why}: rebuild it with `fixrl sandbox build-image"
                           + ("" if tag == DEFAULT_IMAGE else f" --tag {tag}") + "` (or `make image`)")


def build_image(tag: str = DEFAULT_IMAGE, force: bool = False, mirror: str | None = None,
                packages: tuple[str, ...] = PACKAGES) -> bool:
    """Build `tag` unless it exists with the current recipe (or `force`). Returns True when it
    built one. Raises SandboxError with what to do when a tool, the daemon or the network is missing."""
    c = client()  # a clear error first if the daemon is not there
    if not force and image_exists(tag):
        why = stale_reason(tag, packages)
        if why is None:
            log.info("image %s exists with the current recipe (use --force to rebuild)", tag)
            return False
        log.warning("%s: rebuilding", why)
    if shutil.which("debootstrap") is None:
        raise SandboxError("debootstrap not found: install it (`apt-get install debootstrap`, "
                           "which `make docker` does) to build the sandbox image")
    if os.geteuid() != 0:
        raise SandboxError("debootstrap needs root: run `sudo fixrl sandbox build-image` "
                           "(or `make image` as root)")
    start, old = time.monotonic(), image_id(tag)
    pins = pytest_pins()
    with tempfile.TemporaryDirectory(prefix="fixrl-image-") as tmp:
        wheels = os.path.join(tmp, "wheels")
        _download_wheels(pins, wheels)
        root = os.path.join(tmp, "rootfs")
        cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE, root]
        if mirror:
            cmd.append(mirror)
        log.info("running %s (about a minute)", " ".join(cmd))
        _step(cmd, "debootstrap", "(check the Debian mirror is reachable, or pass --mirror URL)")
        _check_python(root)
        _install_pins(root, pins, wheels)
        tarball = os.path.join(tmp, "rootfs.tar")
        subprocess.run(["tar", "-C", root, "-cf", tarball, "."], check=True)
        log.info("importing %s as %s", tarball, tag)
        repo, _, version = tag.rpartition(":") if ":" in tag.split("/")[-1] else (tag, "", "latest")
        c.api.import_image_from_file(tarball, repository=repo, tag=version,
                                     changes=[f"LABEL {RECIPE_LABEL}={recipe(packages, pins)}"])
    if image_label(tag, RECIPE_LABEL) != recipe(packages, pins):
        raise SandboxError(f"docker import finished but image {tag} is missing or lacks its {RECIPE_LABEL} label")
    remove_replaced(old, tag)
    log.info("built %s in %.0f s", tag, time.monotonic() - start)
    return True


def _step(cmd: list[str], what: str, hint: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SandboxError(f"{what} failed (exit {r.returncode}); last lines:\n"
                           + "\n".join((r.stdout + r.stderr).splitlines()[-15:]) + f"\n{hint}")


def _download_wheels(pins: tuple[str, ...], dest: str) -> None:
    """The pinned wheels, from the package registry (pip's cache when it has them)."""
    log.info("downloading %s", " ".join(pins))
    _step([sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "--no-deps",
           "--only-binary", ":all:", "-d", dest, *pins], "downloading the pinned pytest wheels",
          "(check the package registry is reachable from this machine)")


def _check_python(root: str) -> None:
    """SandboxError when the image's python3 is not fixrl's major.minor."""
    found = sorted(p.name for p in pathlib.Path(root, "usr", "bin").glob("python3.*") if p.name[8:].isdigit())
    if f"python{PY}" not in found:
        raise SandboxError(f"the Debian suite {SUITE} has {', '.join(found) or 'no python3'}, but fixrl runs on "
                           f"Python {PY}: run fixrl with the suite's Python (environment layers need the same version)")


def _install_pins(root: str, pins: tuple[str, ...], wheels: str) -> None:
    """Install the wheels offline into the rootfs, add the `pytest` command, compile bytecode
    with the image's own interpreter (chroot), so no sandbox compiles them again."""
    site = root + PINNED_SITE
    _step([sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--no-index", "--no-deps",
           "--find-links", wheels, "--no-compile", "--target", site, *pins], "installing the pinned pytest",
          "(the wheels were downloaded just before; is the disk full?)")
    shutil.rmtree(os.path.join(site, "bin"), ignore_errors=True)  # scripts naming the host's python
    for name, text in console_scripts("pytest").items():
        script = pathlib.Path(root, "usr", "local", "bin", name)
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(text)
        script.chmod(0o755)
    _step(["chroot", root, f"python{PY}", "-m", "compileall", "-q", PINNED_SITE,
           f"/usr/lib/python{PY}/test/support"], "compiling the image's bytecode", "")


def verify_image(tag: str) -> str:
    """Run python, pytest and `test.support` in a sandbox of the image; returns the versions."""
    with tempfile.TemporaryDirectory() as ws, DockerSandbox(pathlib.Path(ws), image=tag) as sb:
        r = sb.exec("python --version && python -m pytest --version && pytest --version"
                    " && python -c 'import test.support.os_helper, test.support.import_helper'", timeout=60)
    if r.exit_code != 0:
        raise SandboxError(f"image {tag} lacks python, pytest or CPython's test package:\n{r.output}")
    return r.output.strip()
