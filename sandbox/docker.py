"""DockerSandbox: a hardened container with a persistent exec server.

Hardening (all on by default): no network (`network_mode="none"`), non-root user 1000:1000,
memory limit (`Limits.memory_mb`, no swap), CPU share (`Limits.cpus`), pids limit, every
capability dropped, no-new-privileges, read-only root filesystem with tmpfs for /tmp and
the workspace, a file-size ulimit, no log driver. Containers carry the label `fixrl=1` and
a per-process session label; they are removed on close, by an atexit handler, by the daemon
itself when the host process dies (the server exits when its stdin closes and the container
is auto-removed), and by `fixrl sandbox cleanup`.

Fast tool calls: the container's main process is `sandbox/inside/server.py` (standard library
only), which reads requests on stdin and answers on stdout; the host keeps one attach stream open,
so a call is one round trip instead of a `docker exec` (see `fixrl bench sandbox`). As PID 1
it cannot be killed from inside the container (`kill -9 1` and `kill -9 -1` included), and
commands it starts are the OOM killer's first choice. Should the container die anyway
(killed from outside, the daemon restarted), the call raises SandboxError with the reason
(a warning is logged) and a pool replaces the sandbox; it is never silently restarted with
the agent's edits lost.

The server's file comes from this process's copy of the inside package, bind-mounted read-only
at /run/fixrl/lib (sandbox.shipping): the image needs no rebuild, a mount costs nothing per
container, and a copy into the container is no option (its read-only root filesystem refuses
one before start). The daemon must therefore see this machine's files (a local daemon).

Fast reset: the initial workspace stays on the host; a reset kills every process but the
server, empties /tmp, and rewrites only the entries whose stamps changed.

Not protected against: kernel exploits (containers share the host kernel; the default
seccomp profile applies), and anything the daemon's own configuration allows.
"""
from __future__ import annotations

import atexit
import base64
import json
import logging
import os
import socket
import threading
import uuid
from pathlib import Path

import requests.exceptions
import tenacity

from fixrl.sandbox import shipping
from fixrl.sandbox.base import DEFAULT_IMAGE, HASH_SEED, WORKDIR, ExecResult, Limits, SandboxError
from fixrl.sandbox.inside import server
from fixrl.sandbox.workspace import Pristine, changed_candidates, diff_contents, plan_restore, read_tree

log = logging.getLogger(__name__)

LABEL = "fixrl"
SESSION = uuid.uuid4().hex[:12]
"""This process's session label: the atexit handler removes exactly these containers."""
USER = "1000:1000"
MAX_READ_BYTES = 16 << 20
BATCH_BYTES = 8 << 20
"""Workspace writes are sent in requests of about this size."""
RPC_MARGIN = 30.0
"""Seconds a request may take beyond its own timeout before the sandbox counts as hung."""
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
       "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
       "PYTEST_ADDOPTS": "-p no:cacheprovider", "PYTHONHASHSEED": HASH_SEED}

_client = None
_client_lock = threading.Lock()
_live: dict[str, DockerSandbox] = {}
_live_lock = threading.Lock()


def _docker_errors():
    import docker.errors  # noqa: PLC0415 - the docker SDK only for the Docker backend

    return docker.errors, requests.exceptions


def client():
    """One SDK client per process; raises SandboxError naming what to do when the daemon is
    unreachable."""
    global _client
    with _client_lock:
        if _client is None:
            import docker  # noqa: PLC0415 - the docker SDK only for the Docker backend

            try:
                # One HTTP connection per concurrent call: a pool of 30 sandboxes makes 30 at a time.
                c = docker.from_env(timeout=60, max_pool_size=64)
                c.ping()
            except Exception as e:
                host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
                raise SandboxError(
                    f"Docker daemon not reachable at {host} ({type(e).__name__}): start it with "
                    "`make docker` (or `dockerd &`), or use the local backend (--backend local)"
                ) from e
            _client = c
        return _client


def _retry_transient(fn, what: str):
    """Retry daemon calls that failed for reasons outside the sandbox (a busy daemon, a
    dropped connection), with tenacity; anything else is raised at once."""

    errors, req = _docker_errors()

    def transient(e: BaseException) -> bool:
        if isinstance(e, (req.ConnectionError, req.Timeout)):
            return True
        if isinstance(e, errors.APIError) and not isinstance(e, (errors.NotFound, errors.ImageNotFound)):
            return e.status_code is None or e.status_code >= 500 and "No such" not in str(e)
        return False

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(4),
        wait=tenacity.wait_exponential(multiplier=0.2, max=3),
        retry=tenacity.retry_if_exception(transient),
        before_sleep=lambda rs: log.warning("docker %s failed (%s); retrying", what,
                                            rs.outcome.exception()),
        reraise=True)
    return retrying(fn)


def require_image(image: str) -> None:
    """SandboxError saying how to build `image` when the daemon does not have it (or cannot say)."""
    errors, req = _docker_errors()
    c = client()
    try:
        _retry_transient(lambda: c.images.get(image), "image lookup")
    except errors.ImageNotFound:
        raise SandboxError(
            f"Docker image {image!r} not found: build it with `fixrl sandbox build-image"
            + ("" if image == DEFAULT_IMAGE else f" --tag {image}") + "` "
            "(or `make image`)") from None
    except (errors.DockerException, req.RequestException) as e:
        raise SandboxError(f"Docker daemon error looking up {image!r}: {e}") from e


def _frames(buf: bytearray):
    """Pop complete multiplexed frames (stream id, payload) off the front of buf."""
    while len(buf) >= 8:
        size = int.from_bytes(buf[4:8], "big")
        if len(buf) < 8 + size:
            return
        stream = buf[0]
        payload = bytes(buf[8:8 + size])
        del buf[:8 + size]
        yield stream, payload


class _Channel:
    """The attach stream to the server: writes requests to its stdin, reads its stdout out
    of the daemon's multiplexed frames (stream 1 = stdout, 2 = stderr)."""

    def __init__(self, api, container_id: str):
        resp = api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                       "stream": 1})
        self.sock: socket.socket = getattr(resp, "_sock", resp)
        self._resp = resp
        self.raw = bytearray()
        self.out = bytearray()
        self.stderr_tail = bytearray()

    def call(self, req: dict, timeout: float) -> dict:
        body = json.dumps(req).encode("utf-8")
        self.sock.settimeout(timeout)
        self.sock.sendall(server.HEADER.pack(len(body)) + body)
        need = None
        while True:
            if need is None and len(self.out) >= 4:
                need = 4 + server.HEADER.unpack(self.out[:4])[0]
            if need is not None and len(self.out) >= need:
                reply = json.loads(bytes(self.out[4:need]))
                del self.out[:need]
                return reply
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("exec server stream closed")
            self.raw += chunk
            for stream, payload in _frames(self.raw):
                if stream == 1:
                    self.out += payload
                else:
                    self.stderr_tail = (self.stderr_tail + payload)[-4000:]

    def close(self) -> None:
        for c in (self.sock, self._resp):
            try:
                c.close()
            except Exception:
                pass


class DockerSandbox:
    """A sandbox in a hardened container (see module docstring)."""

    def __init__(self, workspace: Path, image: str = DEFAULT_IMAGE,
                 limits: Limits | None = None, *, workspace_mb: int | None = None,
                 tmp_mb: int | None = None):
        """workspace_mb / tmp_mb: sizes of the two tmpfs mounts (default: a quarter of the
        memory limit each, at least 64 MB; tmpfs pages count against the memory limit)."""
        self.limits = limits or Limits()
        self.image = image
        self._lock = threading.RLock()
        self._closed = False
        self.id: str | None = None
        self.short_id = "-"
        self._chan: _Channel | None = None
        pristine = Pristine(read_tree(Path(workspace)))  # SandboxError if missing
        quarter = max(self.limits.memory_mb // 4, 64)
        try:
            self._start(workspace_mb or quarter, tmp_mb or quarter)
            self._pristine = pristine
            self._load()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ container

    def _start(self, workspace_mb: int, tmp_mb: int) -> None:
        import docker  # noqa: PLC0415 - the docker SDK only for the Docker backend

        errors, req = _docker_errors()
        failures = (errors.DockerException, req.RequestException)
        c = client()
        require_image(self.image)
        lim = self.limits
        tmpfs_opts = "rw,exec,nosuid,nodev,uid=1000,gid=1000"
        host_config = c.api.create_host_config(
            auto_remove=True,
            network_mode="bridge" if lim.network else "none",
            mem_limit=f"{lim.memory_mb}m", memswap_limit=f"{lim.memory_mb}m",
            nano_cpus=int(lim.cpus * 1e9), pids_limit=lim.pids,
            cap_drop=["ALL"], security_opt=["no-new-privileges"], read_only=True,
            tmpfs={WORKDIR: f"{tmpfs_opts},mode=0755,size={workspace_mb}m",
                   "/tmp": f"{tmpfs_opts},mode=1777,size={tmp_mb}m"},
            ulimits=[docker.types.Ulimit(name="fsize", soft=lim.file_size_mb << 20,
                                         hard=lim.file_size_mb << 20)],
            log_config=docker.types.LogConfig(type="none"), ipc_mode="private",
            binds={str(shipping.shared_copy()): {"bind": shipping.LIB_IN_SANDBOX, "mode": "ro"}})

        def create() -> str:
            # detach=False + stdin_open: StdinOnce, so the server sees EOF and the container
            # stops (and is auto-removed) when our attach stream goes away, even if we die.
            return c.api.create_container(
                self.image, command=["python3", "-I", "-S", shipping.in_sandbox("server.py")], user=USER,
                detach=False, stdin_open=True, environment=ENV, working_dir="/",
                hostname="sandbox", host_config=host_config,
                labels={LABEL: "1", f"{LABEL}.session": SESSION, f"{LABEL}.pid": str(os.getpid())},
            )["Id"]

        try:
            self.id = _retry_transient(create, "container create")
        except failures as e:
            raise SandboxError(f"could not create a container from {self.image!r}: {e}") from e
        self.short_id = self.id[:12]
        with _live_lock:
            _live[self.id] = self
        try:
            self._chan = _retry_transient(lambda: _Channel(c.api, self.id), "attach")
            _retry_transient(lambda: c.api.start(self.id), "container start")
        except failures as e:
            hint = (" (the image must provide python3 for the exec server)"
                    if "python3" in str(e) else "")
            raise SandboxError(f"could not start a container from {self.image!r}{hint}: {e}") from e
        self._ping()

    def _ping(self) -> None:
        errors, req = _docker_errors()
        try:
            reply = self._chan.call({"op": "ping"}, timeout=30)
        except (errors.DockerException, req.RequestException, OSError, ValueError) as e:
            raise SandboxError(f"exec server in {self.short_id} (image {self.image}) did not "
                               f"answer: {e}{self._death_note()}; the image must provide python3 "
                               "for the exec server") from e
        if not reply.get("ok") or reply.get("pid") != 1:
            raise SandboxError(f"unexpected exec server reply: {reply}")

    def _death_note(self) -> str:
        """Why the container is gone, if it is."""
        errors, req = _docker_errors()
        try:
            st = client().api.inspect_container(self.id)["State"]
            if st.get("Running"):
                return ""
            return f" (container {st.get('Status')}, exit {st.get('ExitCode')}" \
                   f"{', out of memory' if st.get('OOMKilled') else ''})"
        except errors.NotFound:
            return " (container is gone)"
        except Exception as e:
            return f" (container state unknown: {e})"

    def _rpc(self, req: dict, timeout: float) -> dict:
        """One request to the server. The stream is the server's stdin with StdinOnce: if it
        breaks, the server sees EOF and the container ends, so a broken stream or a dead
        container is a SandboxError (callers retry on a fresh sandbox; a pool replaces it)."""
        with self._lock:
            if self._closed:
                raise SandboxError("sandbox is closed")
            if self._chan is None:
                raise SandboxError(f"sandbox {self.short_id} lost its exec server earlier")
            try:
                reply = self._chan.call(req, timeout + RPC_MARGIN)
            except (OSError, ValueError) as e:
                self._chan.close()
                self._chan = None
                note = self._death_note() or " (stream to the exec server broke)"
                log.warning("sandbox %s failed: %s%s", self.short_id, e, note)
                raise SandboxError(f"sandbox {self.short_id} failed: "
                                   f"{type(e).__name__}: {e}{note}") from e
            if not reply.get("ok"):
                raise _error_from(reply)
            return reply

    # ------------------------------------------------------------------ Sandbox protocol

    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        cmd = server.clean_text(cmd)
        bad = server.bad_command(cmd)
        if bad is not None:
            return ExecResult(**bad)
        lim = self.limits
        res = self._rpc({"op": "exec", "argv": ["bash", "-c", cmd], "cwd": WORKDIR, "env": ENV,
                         "timeout": timeout, "max_output": lim.max_output_bytes,
                         "cpu_seconds": int(timeout) + 1},
                        timeout)
        res.pop("ok")
        return ExecResult(**res)

    def read_file(self, path: str) -> str:
        reply = self._rpc({"op": "read", "path": _abs(path), "max_bytes": MAX_READ_BYTES}, 60)
        return base64.b64decode(reply["data"]).decode("utf-8", "replace")

    def write_file(self, path: str, content: str) -> None:
        data = base64.b64encode(content.encode("utf-8", "replace")).decode("ascii")
        self._rpc({"op": "write", "path": _abs(path), "data": data}, 60)

    def changed_files(self) -> dict[str, str | None]:
        with self._lock:
            current = self._rpc({"op": "scan", "root": WORKDIR}, 60)["entries"]
            maybe, missing = changed_candidates(self._pristine, current)
            contents: dict[str, bytes | None] = {}
            if maybe:
                got = self._rpc({"op": "read_many", "root": WORKDIR, "paths": maybe,
                                 "max_bytes": MAX_READ_BYTES}, 60)["data"]
                contents = {k: (None if v is None else base64.b64decode(v)) for k, v in got.items()}
            return diff_contents(self._pristine, maybe, missing, contents)

    def _apply(self, delete: list[str], write: list[str]) -> dict[str, list]:
        """Send deletions and writes in batches of about BATCH_BYTES."""
        p = self._pristine
        stamps: dict[str, list] = {}
        batch: list[list] = []
        size = 0
        pending_delete = list(delete)
        for rel in write:
            w = p.wire(rel)
            batch.append([w[0], w[1], w[2], base64.b64encode(w[3]).decode("ascii")])
            size += len(w[3])
            if size >= BATCH_BYTES:
                stamps.update(self._rpc({"op": "apply", "root": WORKDIR, "delete": pending_delete,
                                         "write": batch}, 120)["stamps"])
                batch, size, pending_delete = [], 0, []
        if batch or pending_delete:
            stamps.update(self._rpc({"op": "apply", "root": WORKDIR, "delete": pending_delete,
                                     "write": batch}, 120)["stamps"])
        return stamps

    def _load(self) -> None:
        with self._lock:
            current = self._rpc({"op": "reset", "root": WORKDIR, "clear": ["/tmp", WORKDIR]}, 60)
            assert not current["entries"]
            self._pristine.stamps = self._apply([], list(self._pristine.entries))

    def reset(self, workspace: Path | None = None) -> None:
        with self._lock:
            if workspace is not None:
                self._pristine = Pristine(read_tree(Path(workspace)))
                self._load()
                return
            current = self._rpc({"op": "reset", "root": WORKDIR, "clear": ["/tmp"]}, 60)["entries"]
            p = self._pristine
            delete, write = plan_restore(p, current)
            if delete or write:
                stamps = self._apply(delete, write)
                for rel in delete:
                    p.stamps.pop(rel, None)
                p.stamps.update(stamps)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._chan is not None:
                self._chan.close()
                self._chan = None
            if self.id is not None:
                _remove(self.id)
                with _live_lock:
                    _live.pop(self.id, None)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DockerSandbox({self.short_id}, image={self.image!r})"


def _abs(path: str) -> str:
    return os.path.normpath(path if path.startswith("/") else f"{WORKDIR}/{path}")


_ERRORS = {"NotRegularFileError": server.NotRegularFileError,
           "FileNotFoundError": FileNotFoundError, "IsADirectoryError": IsADirectoryError,
           "NotADirectoryError": NotADirectoryError, "PermissionError": PermissionError,
           "FileExistsError": FileExistsError, "ValueError": ValueError}


def _error_from(reply: dict) -> Exception:
    """The server's failure as the exception the Sandbox protocol promises."""
    name, msg = reply.get("error"), reply.get("message", "")
    errno = reply.get("errno")
    os_args = (errno, reply.get("strerror") or msg) + ((reply["filename"],) if reply.get("filename") else ())
    if name in _ERRORS:
        if errno is not None and issubclass(_ERRORS[name], OSError):
            return _ERRORS[name](*os_args)
        return _ERRORS[name](msg)
    if name.startswith("Unicode") or name in ("TypeError", "KeyError"):
        return ValueError(f"{name}: {msg}")  # a malformed request: the sandbox is fine
    if errno is not None:  # other OSErrors (read-only file system, ...)
        return OSError(*os_args)
    return OSError(f"{name}: {msg}")


def _remove(container_id: str) -> None:
    errors, req = _docker_errors()
    try:
        _retry_transient(lambda: client().api.remove_container(container_id, force=True), "remove")
    except errors.NotFound:
        pass
    except errors.APIError as e:
        if "already in progress" not in str(e) and "No such container" not in str(e):
            log.warning("could not remove container %s: %s", container_id[:12], e)
    except Exception as e:  # the daemon is gone: auto_remove takes them when it is back
        log.warning("could not remove container %s: %s", container_id[:12], e)


def cleanup(session: str | None = None) -> int:
    """Remove fixrl containers: every labelled one, or only those of one session (this
    process's is `SESSION`). Returns how many."""
    c = client()
    flt = {"label": [f"{LABEL}=1"] + ([f"{LABEL}.session={session}"] if session else [])}
    ids = [x["Id"] for x in c.api.containers(all=True, filters=flt)]
    for cid in ids:
        _remove(cid)
    return len(ids)


@atexit.register
def _remove_session_containers() -> None:
    with _live_lock:
        live = list(_live.values())
    for sb in live:
        try:
            sb.close()
        except Exception:
            pass
