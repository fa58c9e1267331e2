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
import configparser
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock

from fixrl.sandbox.base import DEFAULT_IMAGE, WORKDIR, SandboxError
from fixrl.sandbox.inside.env_plugins import PLUGINS_FILE

TAG_PREFIX = "fixrl-env:"
"""Runtime names of environments start with this; the rest is the spec's hash."""
PACKAGING_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "PKG-INFO")
"""The repository files that decide what installing it gives (hashed with `install`)."""
WORKSPACE_PTH = "fixrl-workspace.pth"
LAYOUT = 2
"""What an environment holds besides its packages, in the tag: 2 records its pytest plugins
(PLUGINS_FILE); an environment built before gets a new tag and is built again."""


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

    def blame(self, errors: str) -> list[str]:
        """The entries of the spec that pip's `errors` (its `ERROR:` lines) are about, each as
        `environment.FIELD[i]: VALUE`: a requirement file pip names (`(from -r PATH (line N))`,
        `Cannot install -r PATH`) or one that lists a project the errors name; a package the
        errors name; the repository itself (`install`, `extras`) when its name is in them."""
        named = {_project_name(w) for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._-]*", errors)}
        found: list[str] = []
        for i, req in enumerate(self.requirements):
            path = Path(self.repo or ".") / req
            listed = {_project_name(line) for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
                      if line.strip() and not line.lstrip().startswith(("#", "-"))} if path.is_file() else set()
            if str(path) in errors or listed & named:
                found.append(f"environment.requirements[{i}]: {req}")
        for i, package in enumerate(self.packages):
            if _project_name(package) in named:
                found.append(f"environment.packages[{i}]: {package}")
        if f"pytest=={_pytest_version()}" in errors and "pytest" not in {_project_name(p) for p in self.packages}:
            found.append(f"pytest=={_pytest_version()} (fixrl's own, added because the spec names no pytest)")
        own = _own_name(Path(self.repo)) if self.repo else None
        if self.install and own and own in named:
            found.append("environment.install: true (the repository's own dependencies"
                         + (f", extras {list(self.extras)})" if self.extras else ")"))
        return found

    def tag(self) -> str:
        """`fixrl-env:<hash>`: the spec (not the repository's path), the files it reads and the
        Python version. The same for both backends (each keeps its own build under it)."""
        h = hashlib.sha256()
        fields = {k: v for k, v in asdict(self).items() if k != "repo"}
        fields["python"] = host_python()
        fields["pytest"] = _pytest_version()
        fields["layout"] = LAYOUT
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


def _own_name(repo: Path) -> str | None:
    """The repository's project name (pyproject's `[project] name`, else PKG-INFO's `Name:`,
    else the folder's name without a `-VERSION` tail), normalized."""
    try:
        name = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8")).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        name = None
    if not isinstance(name, str) and (repo / "PKG-INFO").is_file():
        m = re.search(r"^Name:\s*(\S+)", (repo / "PKG-INFO").read_text(encoding="utf-8", errors="replace"), re.M)
        name = m.group(1) if m else None
    return _project_name(name if isinstance(name, str) else repo.name.rsplit("-", 1)[0]) or None


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


def _run(cmd: list[str], what: str, progress: Callable[[str], None],
         blame: Callable[[str], list[str]] = lambda errors: []) -> None:
    """Run one build step, passing pip's news on to `progress` as it comes (a build of a minute
    is never silent); EnvBuildError when it fails: pip's `ERROR:` lines first (what failed; the
    last lines of a long output need not hold them), then the spec's entries `blame` finds in
    them, how to fix it, and the output's last lines."""
    progress(what)
    start = time.monotonic()
    tail: collections.deque[str] = collections.deque(maxlen=12)
    errors: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.strip()
            if line:
                tail.append(line)
            if line.startswith("ERROR:") and len(errors) < 20:
                errors.append(line)
            if line.startswith(_PIP_NEWS):
                progress(f"  {line}")
    if proc.returncode != 0:
        raise EnvBuildError(_failure(what, proc.returncode, errors, list(tail), blame("\n".join(errors))))
    progress(f"{what}: done ({time.monotonic() - start:.1f} s)")


def _failure(what: str, code: int, errors: list[str], tail: list[str], blamed: list[str]) -> str:
    """The message of a failed build step (`_run`)."""
    lines = [f"{what} failed (exit {code}):", *errors]
    if blamed:
        lines += ["brought in by:", *(f"  {b}" for b in blamed)]
        lines.append("to fix it: change or drop that entry in suite.yaml's `environment:` (or the task's), or pin "
                     "a version that installs; `fixrl env detect REPO` prints what the packaging files call for")
    else:
        lines.append("to fix it: check the package names and versions in suite.yaml's `environment:` "
                     "(`fixrl env detect REPO` prints what the packaging files call for) and that the package "
                     "registry is reachable")
    rest = [t for t in tail if t not in errors]
    if rest:
        lines += ["pip's last lines:", *rest]
    return "\n".join(lines)


def _stage(spec: EnvSpec, stage: Path, wheels: Path, progress: Callable[[str], None]) -> None:
    """Download and build every wheel (network), then install them offline into `stage`."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    # pip's news line by line (`_run`), no bar redrawn in place
    wheel, install = pip + ["wheel", "--progress-bar", "off"], pip + ["install", "--progress-bar", "off"]
    own: list[str] = []
    if spec.install:
        selfdir = wheels / "self"
        # absolute: pip reads a bare relative folder name (`jinja2-3.1.6`) as a project to download
        _run(wheel + ["--no-deps", "-w", str(selfdir), str(Path(spec.repo or ".").resolve())],
             "building the repository's wheel", progress)
        built = sorted(selfdir.glob("*.whl"))
        if len(built) != 1:
            raise EnvBuildError(f"building {spec.repo} gave {len(built)} wheels, not one")
        own = [f"{built[0]}[{','.join(spec.extras)}]" if spec.extras else str(built[0])]
    _run(wheel + ["-w", str(wheels)] + own + spec.pip_args(), "resolving and downloading", progress, spec.blame)
    _run(install + ["--no-index", "--find-links", str(wheels), "--no-compile", "--target", str(stage)]
         + own + spec.pip_args(), "installing offline", progress, spec.blame)
    own_dist = None
    if spec.install:
        own_dist = _strip_own_code(spec, stage, Path(own[0].split("[")[0]))
    record_plugins(stage, own_dist)


def record_plugins(site: Path, own_dist: str | None = None) -> list[dict[str, str]]:
    """Write the `pytest11` entry points of the distributions installed in `site` (the
    environment's site-packages) into its PLUGINS_FILE, which every run of the repository's
    tests loads explicitly, autoloading off (`sandbox/inside/env_plugins.py`); read here, on the
    host, when the environment is built, never from a sandbox's sys.path. The repository's own
    distribution (`own_dist`) is left out: its code is the workspace's. Returns the entries."""
    entries: list[dict[str, str]] = []
    for info in sorted(site.glob("*.dist-info")):
        dist = info.name.split("-")[0]
        if own_dist is not None and dist.lower().replace("-", "_") == own_dist.lower().replace("-", "_"):
            continue
        eps = info / "entry_points.txt"
        if not eps.is_file():
            continue
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # entry point names keep their case
        try:
            parser.read_string(eps.read_text(encoding="utf-8", errors="replace"))
        except configparser.Error as e:
            raise EnvBuildError(f"{eps}: unreadable entry points ({e})") from None
        if parser.has_section("pytest11"):
            entries += [{"name": k, "value": v.strip(), "dist": dist} for k, v in parser.items("pytest11")]
    entries.sort(key=lambda e: (e["name"], e["dist"]))
    (site / PLUGINS_FILE).write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    return entries


def _strip_own_code(spec: EnvSpec, stage: Path, wheel: Path) -> str:
    """Remove the repository's own modules from `stage` (keeping its metadata) and point a
    `.pth` file at the workspace's import root, so the workspace's code is what runs; the
    repository's distribution name."""
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
    return dist


def build_local(spec: EnvSpec, progress: Callable[[str], None] = lambda s: None, force: bool = False) -> Path:
    """The local backend's virtual environment of `spec` (built unless it exists), its packages'
    bytecode compiled in; its path."""
    spec.validate()
    tag = spec.tag()
    dest = env_dir(tag)
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    # One build of a tag at a time: two processes sharing the cache (parallel test workers, two
    # runs) would otherwise both build, and the second would delete `dest` under the first's
    # sandboxes; the wheel folder is shared by them too. Not guarded: a `force` rebuild while
    # another process's sandboxes use the environment.
    with _tag_lock(tag):
        if (dest / "bin" / "python").exists() and not force:
            progress(f"cached at {dest}")
            return dest
        _build_into(spec, tag, dest, root, progress)
        _compile_local(dest, progress)
        _make_readable(dest)
    progress(f"built at {dest}")
    return dest


def _tag_lock(tag: str) -> FileLock:
    """The inter-process lock of one environment tag: its local venv, its Docker image and the
    wheel folder both are staged from. Waits at most 30 minutes for another process's build."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return FileLock(str(root / f".{tag.replace(':', '_').replace('/', '_')}.lock"), timeout=1800)


def _build_into(spec: EnvSpec, tag: str, dest: Path, root: Path, progress: Callable[[str], None]) -> None:
    """Build `spec`'s environment in a temporary folder under `root` and rename it to `dest`."""
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


def _compile_local(dest: Path, progress: Callable[[str], None]) -> None:
    """Compile the environment's packages at their final path by its own interpreter: sandboxes
    (other uids) cannot write __pycache__ there and would compile every module at every import.
    A file that does not compile (a package's test data) is left as it is: see _build_image."""
    site = next((dest / "lib").glob("python3*/site-packages"))
    progress("compiling the packages' bytecode")
    compiled = subprocess.run([str(dest / "bin" / "python"), "-m", "compileall", "-q", str(site)],
                              capture_output=True, text=True, errors="replace")
    if compiled.returncode != 0:
        last = (compiled.stdout + compiled.stderr).strip().splitlines() or [""]
        progress(f"  some files did not compile (exit {compiled.returncode}; last: {last[-1][:200]}); the rest did")


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

    spec.validate()
    tag = spec.tag()
    if not images.image_exists(spec.base_image):
        raise EnvBuildError(f"the base image {spec.base_image} is missing: run `fixrl sandbox build-image`")
    try:
        images.require_base_image(spec.base_image)
    except SandboxError as e:
        raise EnvBuildError(str(e)) from None
    with _tag_lock(tag):  # see build_local
        if docker_env_current(spec) and not force:
            progress("image exists")
            return tag
        if images.image_exists(tag):
            progress(f"the image was built on another {spec.base_image}: rebuilding it")
        old = images.image_id(tag)
        _build_image(spec, tag, progress)
        images.remove_replaced(old, tag)
    progress("image built")
    return tag


def _build_image(spec: EnvSpec, tag: str, progress: Callable[[str], None]) -> None:
    """Commit `spec`'s staged packages, compiled by the image's own interpreter, as a layer over
    its base image labelled with the base image's id, tagged `tag`."""
    from fixrl.sandbox import image as images  # noqa: PLC0415 - the docker SDK only for the Docker backend
    from fixrl.sandbox.docker import client  # noqa: PLC0415 - likewise

    base_id = images.image_id(spec.base_image)
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

