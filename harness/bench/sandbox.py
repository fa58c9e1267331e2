"""fixrl bench sandbox: start, tool-call latency, reset and close of a sandbox, against plain
`docker exec` measured in the same run."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from fixrl.harness.bench.errors import BenchError
from fixrl.sandbox import DEFAULT_IMAGE, open_sandbox

TARGET_EXEC_RATIO = 8.0
TARGET_RESET_MS = 150.0


@dataclass
class Config:
    """`fixrl bench sandbox`."""

    backend: Literal["docker", "local"] = "docker"
    """Sandbox backend to measure."""
    n: int = 200
    """Tool calls timed."""
    files: int = 50
    """Files in the repository that is reset."""
    image: str | None = None
    """Docker image (None: the base image)."""

    def validate(self) -> None:
        if self.n < 1 or self.files < 3:
            raise BenchError(f"bench sandbox: n ({self.n}) must be >= 1 and files ({self.files}) >= 3")


def _make_repo(path, n_files: int) -> None:
    pkg = path / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for i in range(n_files - 2):
        body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n" for j in range(20))
        (pkg / f"mod{i:03d}.py").write_text(body)
    (path / "test_pkg.py").write_text("from pkg.mod000 import f0_1\n\ndef test():\n    assert f0_1(1) == 2\n")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def measure(cfg: Config) -> dict:
    """All figures in milliseconds."""
    cfg.validate()
    backend, n, files, image = cfg.backend, cfg.n, cfg.files, cfg.image
    image = image or DEFAULT_IMAGE
    res: dict = {"backend": backend, "n": n, "files": files}
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-") as tmp:
        repo = Path(tmp) / "repo"
        _make_repo(repo, files)
        starts, closes = [], []
        for _ in range(3):
            t = time.perf_counter()
            sb = open_sandbox(repo, backend=backend, image=image)
            starts.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            sb.close()
            closes.append((time.perf_counter() - t) * 1000)
        res["start_ms"] = _pct(starts, 0.5)
        res["close_ms"] = _pct(closes, 0.5)

        sb = open_sandbox(repo, backend=backend, image=image)
        try:
            sb.exec("true")  # warm
            ex = _timed(lambda: sb.exec("true", timeout=30), n)
            res["exec_p50_ms"], res["exec_p90_ms"] = _pct(ex, 0.5), _pct(ex, 0.9)
            rd = _timed(lambda: sb.read_file("pkg/mod001.py"), max(n // 4, 10))
            res["read_file_p50_ms"] = _pct(rd, 0.5)

            def dirty_then_reset():
                sb.exec("for i in 1 2 3 4 5; do echo '# edit' >> pkg/mod00$i.py; done; "
                        "rm pkg/mod010.py; echo new > new.txt; mkdir -p junk && echo x > junk/y",
                        timeout=30)
                t = time.perf_counter()
                sb.reset()
                return (time.perf_counter() - t) * 1000

            resets = [dirty_then_reset() for _ in range(20)]
            res["reset_ms"] = _pct(resets, 0.5)
            res["reset_p90_ms"] = _pct(resets, 0.9)
            res["reset_clean_ms"] = _pct(_timed(sb.reset, 20), 0.5)
            assert sb.changed_files() == {}, "reset left changes"

            # baseline: plain `docker exec` into a container of the same image
            if shutil.which("docker") and _docker_ok():
                if backend == "docker":
                    cid, own = sb.id, False
                else:
                    cid = subprocess.run(["docker", "run", "-d", "--rm", "--network", "none",
                                          "--label", "fixrl=1", image, "sleep", "600"],
                                         capture_output=True, text=True, check=True).stdout.strip()
                    own = True
                try:
                    k = max(min(n // 4, 50), 10)
                    cli = _timed(lambda: subprocess.run(["docker", "exec", cid, "true"],
                                                        capture_output=True, check=True), k)
                    res["docker_exec_cli_p50_ms"] = _pct(cli, 0.5)
                    from fixrl.sandbox.docker import client  # noqa: PLC0415 - the docker SDK, only when Docker is measured

                    api = client().api

                    def sdk_exec():
                        e = api.exec_create(cid, ["true"])
                        api.exec_start(e["Id"])

                    sdk = _timed(sdk_exec, k)
                    res["docker_exec_sdk_p50_ms"] = _pct(sdk, 0.5)
                finally:
                    if own:
                        subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
                res["exec_speedup_vs_cli"] = res["docker_exec_cli_p50_ms"] / res["exec_p50_ms"]
                res["exec_speedup_vs_sdk"] = res["docker_exec_sdk_p50_ms"] / res["exec_p50_ms"]
        finally:
            sb.close()
    return res


def _docker_ok() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def show(res: dict[str, Any], con: Any) -> None:
    """The figures as a table and the two targets' verdicts, on a rich console."""

    t = Table(title=f"fixrl bench sandbox ({res['backend']}, {res['files']}-file repository)")
    t.add_column("measure")
    t.add_column("ms", justify="right")
    for key, label in [("start_ms", "start (median of 3)"), ("exec_p50_ms", "exec `true` p50"),
                       ("exec_p90_ms", "exec `true` p90"), ("read_file_p50_ms", "read_file p50"),
                       ("reset_ms", "reset after 8 changes, p50"), ("reset_p90_ms", "reset p90"),
                       ("reset_clean_ms", "reset, nothing changed"), ("close_ms", "close"),
                       ("docker_exec_cli_p50_ms", "baseline: `docker exec` CLI p50"),
                       ("docker_exec_sdk_p50_ms", "baseline: SDK exec_run p50")]:
        if key in res:
            t.add_row(label, f"{res[key]:.1f}")
    con.print(t)
    if "exec_speedup_vs_cli" in res:
        r = res["exec_speedup_vs_cli"]
        verdict = ("met" if r >= TARGET_EXEC_RATIO else "MISSED") if res["backend"] == "docker" \
            else "applies to the docker backend"
        con.print(f"exec speed-up vs `docker exec`: {r:.1f}x (SDK exec: "
                  f"{res['exec_speedup_vs_sdk']:.1f}x); target >= {TARGET_EXEC_RATIO:.0f}x: {verdict}")
    con.print(f"reset {res['reset_ms']:.1f} ms; target < {TARGET_RESET_MS:.0f} ms: "
              f"{'met' if res['reset_ms'] < TARGET_RESET_MS else 'MISSED'}")
