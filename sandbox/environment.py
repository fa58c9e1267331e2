"""Repository environments: the Python packages a repository's tests need, built once on the
host and installed without network into what sandboxes run.

An `EnvSpec` (a frozen record) names them: the repository itself (`install`, with its
`extras`), requirement files of the repository, extra packages, and the Python version they are
for. `build_environment` resolves and downloads them on the host (`pip wheel`: wheels from the
package registry, sdists built into wheels; the only step that needs network), then installs
the wheels with `--no-index` into a staging directory:

- local backend: a virtual environment at `env_dir(tag)` (under `FIXRL_ENV_DIR`, default
  `~/.cache/fixrl/envs`, never under a sandbox's /tmp), made from the interpreter running fixrl;
  `LocalSandbox(python=...)` runs it (its `python`, `python3`, `pytest` and the forking
  sandbox's interpreter);
- Docker: an image layer over the base image, tagged `fixrl-env:<hash>`, with the packages in
  the interpreter's `/usr/local/lib/python3.X/dist-packages`.

Both are cached by `EnvSpec.tag()`: a hash of the spec, the contents of the files it reads
(requirement files; with `install`, the repository's packaging files) and the Python version.

The repository's own code always comes from the sandbox's workspace, never from the
environment: with `install`, its wheel is installed for its metadata (entry points,
`importlib.metadata.version`) and dependencies, its modules are removed again, and a `.pth`
file puts the workspace's import root (`WORKDIR` or `WORKDIR/src`) on `sys.path`, so what
the agent edits is what runs.

Pytest is installed into every environment (fixrl's own pytest version unless the spec names
pytest), so an environment needs nothing of fixrl's interpreter's packages.

What it does NOT guarantee: that the resolved versions are the ones a repository's CI used
(pip resolves at build time; pin versions in `packages` or a requirement file to fix them);
binary wheels are resolved for the host's interpreter, so the Docker image's Python must have
the same major.minor version (checked at build time); without bubblewrap, the `.pth` file's
`WORKDIR` does not exist (the local sandbox then runs in the workspace's host path, where the
test command's own import settings apply).
"""
from __future__ import annotations

import collections
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from fixrl.sandbox.base import DEFAULT_IMAGE, WORKDIR, SandboxError

TAG_PREFIX = "fixrl-env:"
"""Runtime names of environments start with this; the rest is the spec's hash."""
PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "PKG-INFO")
"""The repository files that decide what installing it gives (hashed with `install`)."""
WORKSPACE_PTH = "fixrl-workspace.pth"


class EnvBuildError(RuntimeError):
    """An environment could not be built (a package not found, a build failed, no network):
    the message names the spec's field or the package and what to do. Not a SandboxError:
    building again fails the same way until the spec or the network changes."""


@dataclass(frozen=True)
class EnvSpec:
    """What a repository's tests need installed. Paths are relative to `repo`."""

    repo: str | None = None
    """Host path of the repository (needed by `install` and `requirements`)."""
    install: bool = False
    """Install the repository itself (its dependencies and metadata; its code stays the workspace's)."""
    extras: tuple[str, ...] = ()
    """The repository's extras to install with it (e.g. `test`); needs `install`."""
    requirements: tuple[str, ...] = ()
    """Requirement files of the repository, relative to it (e.g. `requirements/test.txt`)."""
    packages: tuple[str, ...] = ()
    """More requirement specifiers (e.g. `attrs>=22`, `pytest-mock`)."""
    python: str | None = None
    """`major.minor` the environment is for; None: the interpreter running fixrl's."""
    base_image: str = DEFAULT_IMAGE
    """The Docker image the layer goes on."""

    def validate(self) -> None:
        """Raise EnvBuildError naming the field when the spec cannot be built."""
        if (self.install or self.requirements) and not self.repo:
            raise EnvBuildError("environment: `install` and `requirements` need the repository's path")
        if self.extras and not self.install:
            raise EnvBuildError("environment.extras: extras are the repository's own; set `install: true`")
        if self.python is not None and self.python != host_python():
            raise EnvBuildError(f"environment.python: {self.python!r}, but fixrl runs on Python {host_python()}; "
                                f"run fixrl with Python {self.python} (the environment is built from its interpreter)")
        for req in self.requirements:
            if not (Path(self.repo or ".") / req).is_file():
                raise EnvBuildError(f"environment.requirements: {req!r} is not a file of the repository {self.repo}")

    def pip_args(self) -> list[str]:
        """What `pip wheel` / `pip install` get, besides the repository's own wheel."""
        args: list[str] = []
        for req in self.requirements:
            args += ["-r", str(Path(self.repo or ".") / req)]
        args += list(self.packages)
        named = list(self.packages)
        for req in self.requirements:
            named += (Path(self.repo or ".") / req).read_text(encoding="utf-8", errors="replace").splitlines()
        if not any(_project_name(p) == "pytest" for p in named):  # the repository's own pin wins
            args.append(f"pytest=={_pytest_version()}")
        return args

    def tag(self) -> str:
        """`fixrl-env:<hash>`: the spec (not the repository's path), the files it reads and the
        Python version. The same for both backends (each keeps its own build under it)."""
        h = hashlib.sha256()
        fields = {k: v for k, v in asdict(self).items() if k != "repo"}
        fields["python"] = host_python()
        fields["pytest"] = _pytest_version()
        h.update(json.dumps(fields, sort_keys=True).encode())
        repo = Path(self.repo) if self.repo else None
        read = list(self.requirements) + (list(PACKAGING_FILES) if self.install else [])
        for rel in read:
            p = repo / rel if repo else None
            h.update(rel.encode() + b"\0")
            if p is not None and p.is_file():
                h.update(hashlib.sha256(p.read_bytes()).digest())
        return TAG_PREFIX + h.hexdigest()[:16]


def host_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _pytest_version() -> str:
    from importlib.metadata import version  # noqa: PLC0415 - only when a spec is built or hashed

    return version("pytest")


def _project_name(requirement: str) -> str:
    name = requirement.strip()
    for i, ch in enumerate(name):
        if not (ch.isalnum() or ch in "-_."):
            name = name[:i]
            break
    return name.lower().replace("_", "-").replace(".", "-")


def is_env_tag(image: str | None) -> bool:
    return bool(image) and str(image).startswith(TAG_PREFIX)


def cache_root() -> Path:
    """Where environments and their wheels live: `FIXRL_ENV_DIR`, else `~/.cache/fixrl/envs`."""
    return Path(os.environ.get("FIXRL_ENV_DIR") or Path.home() / ".cache" / "fixrl" / "envs")


def env_dir(tag: str) -> Path:
    """The local backend's virtual environment of `tag`."""
    return cache_root() / tag[len(TAG_PREFIX):]


def env_python(tag: str) -> str:
    """The interpreter of `tag`'s local environment; SandboxError when it was not built (a
    sandbox cannot start without it; `fixrl env build` builds it)."""
    exe = env_dir(tag) / "bin" / "python"
    if not exe.exists():
        raise SandboxError(f"the environment {tag} is not built here ({env_dir(tag)} missing): "
                           "run `fixrl env build SUITE` (or validate the suite, which builds it)")
    return str(exe)


_PIP_NEWS = ("Collecting ", "Downloading ", "Using cached ", "Building wheel for ", "Created wheel for ",
             "Processing ", "Installing collected packages:", "Successfully installed ")
"""The lines of pip's output passed on as progress: each package resolved, downloaded (or found
in pip's cache), built into a wheel, installed; pip's other lines only show when a step fails."""


def _run(cmd: list[str], what: str, progress: Callable[[str], None]) -> None:
    """Run one build step, passing pip's news on to `progress` as it comes (a build of a minute
    is never silent); EnvBuildError with the output's last lines when it fails."""
    progress(what)
    start = time.monotonic()
    tail: collections.deque[str] = collections.deque(maxlen=12)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.strip()
            if line:
                tail.append(line)
            if line.startswith(_PIP_NEWS):
                progress(f"  {line}")
    if proc.returncode != 0:
        lines = "\n".join(tail)
        raise EnvBuildError(f"{what} failed (exit {proc.returncode}):\n{lines}\n(check the package names and "
                            "versions in the environment spec, and that the package registry is reachable)")
    progress(f"{what}: done ({time.monotonic() - start:.1f} s)")


def _stage(spec: EnvSpec, stage: Path, wheels: Path, progress: Callable[[str], None]) -> None:
    """Download and build every wheel (network), then install them offline into `stage`."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    # pip's news line by line (`_run`), no bar redrawn in place
    wheel, install = pip + ["wheel", "--progress-bar", "off"], pip + ["install", "--progress-bar", "off"]
    own: list[str] = []
    if spec.install:
        selfdir = wheels / "self"
        _run(wheel + ["--no-deps", "-w", str(selfdir), str(spec.repo)], "building the repository's wheel",
             progress)
        built = sorted(selfdir.glob("*.whl"))
        if len(built) != 1:
            raise EnvBuildError(f"building {spec.repo} gave {len(built)} wheels, not one")
        own = [f"{built[0]}[{','.join(spec.extras)}]" if spec.extras else str(built[0])]
    _run(wheel + ["-w", str(wheels)] + own + spec.pip_args(), "resolving and downloading", progress)
    _run(install + ["--no-index", "--find-links", str(wheels), "--no-compile", "--target", str(stage)]
         + own + spec.pip_args(), "installing offline", progress)
    if spec.install:
        _strip_own_code(spec, stage, Path(own[0].split("[")[0]))


def _strip_own_code(spec: EnvSpec, stage: Path, wheel: Path) -> None:
    """Remove the repository's own modules from `stage` (keeping its metadata) and point a
    `.pth` file at the workspace's import root, so the workspace's code is what runs."""
    dist = wheel.name.split("-")[0]
    infos = [d for d in stage.glob("*.dist-info") if d.name.split("-")[0].lower() == dist.lower()]
    if not infos:
        raise EnvBuildError(f"the repository's wheel {wheel.name} left no metadata in the environment")
    tops: set[str] = set()
    for line in (infos[0] / "RECORD").read_text().splitlines():
        rel = line.rsplit(",", 2)[0]
        top = rel.split("/", 1)[0]
        if top.endswith(".dist-info") or top in ("..", "bin") or not top:
            continue
        tops.add(top)
        target = stage / rel
        if target.is_file():
            target.unlink()
    for top in tops:
        p = stage / top
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
    repo = Path(spec.repo or ".")
    under_src = any((repo / "src" / t).exists() for t in tops) and not any((repo / t).exists() for t in tops)
    (stage / WORKSPACE_PTH).write_text(f"{WORKDIR}/src\n" if under_src else f"{WORKDIR}\n")


def build_local(spec: EnvSpec, progress: Callable[[str], None] = lambda s: None, force: bool = False) -> Path:
    """The local backend's virtual environment of `spec` (built unless it exists); its path."""
    spec.validate()
    tag = spec.tag()
    dest = env_dir(tag)
    if (dest / "bin" / "python").exists() and not force:
        progress(f"cached at {dest}")
        return dest
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=root) as tmp:
        venv = Path(tmp) / "venv"
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", "--without-pip", str(venv)], "making the virtual environment", progress)
        site = next((venv / "lib").glob("python3*/site-packages"))
        _stage(spec, site, _wheel_dir(tag), progress)
        if dest.exists():
            shutil.rmtree(dest)
        os.chmod(venv, 0o755)
        venv.rename(dest)
    # compiled at its final path by its own interpreter: sandboxes (other uids) cannot write
    # __pycache__ there and would compile every module at every import
    # (a file that does not compile, such as a package's test data, is left as it is: see build_docker)
    site = next((dest / "lib").glob("python3*/site-packages"))
    progress("compiling the packages' bytecode")
    compiled = subprocess.run([str(dest / "bin" / "python"), "-m", "compileall", "-q", str(site)],
                              capture_output=True, text=True, errors="replace")
    if compiled.returncode != 0:
        last = (compiled.stdout + compiled.stderr).strip().splitlines() or [""]
        progress(f"  some files did not compile (exit {compiled.returncode}; last: {last[-1][:200]}); the rest did")
    _make_readable(dest)
    progress(f"built at {dest}")
    return dest


def _wheel_dir(tag: str) -> Path:
    d = cache_root() / "wheels" / tag[len(TAG_PREFIX):]
    d.mkdir(parents=True, exist_ok=True)
    return d


def _make_readable(path: Path) -> None:
    """Sandboxes run as other uids: everything readable, directories traversable."""
    for dirpath, _dirs, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o444)
    parent = path.parent
    while parent != parent.parent and parent != Path.home().parent:
        try:
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
        except OSError:
            break
        parent = parent.parent


def docker_env_current(spec: EnvSpec) -> bool:
    """Whether the image of `spec` exists and was built on the base image as it is now (its
    `fixrl.base` label is the base image's id): a rebuilt base image rebuilds every layer."""
    from fixrl.sandbox.image import BASE_LABEL, image_id, image_label  # noqa: PLC0415 - the docker SDK only for Docker

    base = image_id(spec.base_image)
    return base is not None and image_label(spec.tag(), BASE_LABEL) == base


def build_docker(spec: EnvSpec, progress: Callable[[str], None] = lambda s: None, force: bool = False) -> str:
    """The Docker image of `spec` (a layer over `spec.base_image`, built unless it exists on the
    current base image), its packages' bytecode compiled in; its tag."""
    from fixrl.sandbox import image as images  # noqa: PLC0415 - the docker SDK only for the Docker backend
    from fixrl.sandbox.docker import client  # noqa: PLC0415 - likewise

    spec.validate()
    tag = spec.tag()
    if not images.image_exists(spec.base_image):
        raise EnvBuildError(f"the base image {spec.base_image} is missing: run `fixrl sandbox build-image`")
    try:
        images.require_base_image(spec.base_image)
    except SandboxError as e:
        raise EnvBuildError(str(e)) from None
    if docker_env_current(spec) and not force:
        progress("image exists")
        return tag
    if images.image_exists(tag):
        progress(f"the image was built on another {spec.base_image}: rebuilding it")
    base_id, old = images.image_id(spec.base_image), images.image_id(tag)
    c = client()
    probe = c.containers.run(spec.base_image, ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             remove=True, network_mode="none")
    image_py = probe.decode().strip()
    if image_py != host_python():
        raise EnvBuildError(f"the image {spec.base_image} has Python {image_py} and fixrl runs on {host_python()}: "
                            "wheels are resolved for fixrl's interpreter; run fixrl with the image's Python version")
    site = f"/usr/local/lib/python{image_py}/dist-packages"
    with tempfile.TemporaryDirectory(prefix="fixrl-env-") as tmp:
        stage = Path(tmp) / "site"
        _stage(spec, stage, _wheel_dir(tag), progress)
        _make_readable(stage)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:  # paths from / : the folder may not exist yet
            tar.add(stage, arcname=site.lstrip("/"), filter=_root_owned)
        progress(f"compiling the packages' bytecode and committing the layer over {spec.base_image}")
        # compiled by the image's own interpreter, at the paths sandboxes import them from: no
        # sandbox (whose root is read-only) compiles them again at every import
        box = c.containers.create(spec.base_image, ["python3", "-m", "compileall", "-q", site],
                                  network_disabled=True)
        try:
            box.put_archive("/", buf.getvalue()) or _fail_put()
            box.start()
            status = box.wait().get("StatusCode")
            if status != 0:  # a file that is not Python 3 (a package's test data): bytecode is
                # only a saving, and what does not compile here fails the same way if imported
                last = (box.logs().decode(errors="replace").strip().splitlines() or [""])[-1]
                progress(f"  some files did not compile (exit {status}; last: {last[:200]}); the rest did")
            repo, _, version = tag.rpartition(":")
            box.commit(repository=repo, tag=version, changes=[f"LABEL {images.BASE_LABEL}={base_id}"])
        finally:
            box.remove(force=True)
    images.remove_replaced(old, tag)
    progress("image built")
    return tag


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _fail_put() -> None:
    raise EnvBuildError("docker refused the environment's files (put_archive)")


def build_environment(spec: EnvSpec, backend: str, progress: Callable[[str], None] = lambda s: None,
                      force: bool = False) -> str:
    """Build `spec` for `backend` (`local` or `docker`) unless cached; returns its tag."""
    if backend == "docker":
        return build_docker(spec, progress, force)
    build_local(spec, progress, force)
    return spec.tag()

