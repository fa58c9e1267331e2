"""Repository environments (sandbox.environment) and the interpreter's packages across resets."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# What the probe's sandbox needs of the interpreter: pytest and what it imports.
SANDBOX_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py")


def test_packages_survive_every_reset_with_the_venv_under_tmp(tmp_path):
    """A venv under /tmp (a checkout there): after resets, which empty the sandbox's /tmp, a
    forked call and a fresh command still import modules the interpreter never imported."""
    site = Path(sysconfig.get_paths()["purelib"])
    venv = Path(tempfile.mkdtemp(prefix="fixrl-venv-", dir="/tmp"))
    try:
        venv.chmod(0o755)  # as a checkout there would be: sandboxes run as other uids
        subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip",
                        "--clear", str(venv)], check=True)
        (vsite,) = (venv / "lib").glob("python3*/site-packages")
        for name in SANDBOX_PACKAGES:
            src = site / name
            if src.is_dir():
                shutil.copytree(src, vsite / name)
            elif src.exists():
                shutil.copy(src, vsite / name)
        # fixrl and its host-side dependencies for the host process only: the sandbox never sees this path
        (vsite / "host.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
        repo = tmp_path / "repo"
        repo.mkdir()
        (repo / "a.py").write_text("x = 1\n")
        r = subprocess.run([str(venv / "bin" / "python"), str(HERE / "tmp_venv_probe.py"), str(repo)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["prefix"] == str(venv)
        for fork_exit, fork_out, exec_exit, exec_out in out["results"]:
            assert (fork_exit, exec_exit) == (0, 0), (fork_out, exec_out)
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def test_a_local_environment_has_its_bytecode_compiled_at_its_own_path(tmp_path, monkeypatch):
    """Sandboxes run as other uids and cannot write the environment's __pycache__: its modules
    are compiled when it is built, at the path they are imported from."""
    from fixrl.sandbox.environment import EnvSpec, build_local  # noqa: PLC0415 - one test's import

    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    dest = build_local(EnvSpec(packages=("iniconfig",)))
    (site,) = (dest / "lib").glob("python3*/site-packages")
    cached = list((site / "iniconfig" / "__pycache__").glob("__init__.cpython-*.pyc"))
    assert cached, sorted(p.name for p in (site / "iniconfig").iterdir())
    assert str(site / "iniconfig" / "__init__.py").encode() in cached[0].read_bytes()


def _wheel_with_python2_data(root: Path) -> Path:
    """A wheel whose package ships a file that is not Python 3 (test data, as some wheels do)."""
    files = {"oldpkg/__init__.py": "ANSWER = 42\n", "oldpkg/data/py2.py": 'print "not python 3"\n',
             "oldpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: oldpkg\nVersion: 1.0\n",
             "oldpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in files) + "oldpkg-1.0.dist-info/RECORD,,\n"
    root.mkdir(parents=True, exist_ok=True)
    wheel = root / "oldpkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in {**files, "oldpkg-1.0.dist-info/RECORD": record}.items():
            z.writestr(name, text)
    return wheel


@pytest.mark.parametrize("backend", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_an_environment_whose_package_has_a_file_that_does_not_compile_still_builds(tmp_path, monkeypatch,
                                                                                     backend, request):
    """Bytecode is only a saving: a file that does not compile is left as it is, the rest is compiled."""
    from fixrl.sandbox import open_sandbox  # noqa: PLC0415 - one test's import
    from fixrl.sandbox.environment import EnvSpec, build_environment  # noqa: PLC0415 - likewise

    if backend == "docker":
        request.getfixturevalue("docker_available")
    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    spec = EnvSpec(packages=(str(_wheel_with_python2_data(tmp_path / "wheels")),))
    lines: list[str] = []
    tag = build_environment(spec, backend, lines.append)
    try:
        assert any("did not compile" in line for line in lines), lines
        (tmp_path / "ws").mkdir()
        with open_sandbox(tmp_path / "ws", backend=backend, image=tag) as sb:
            r = sb.exec("python -c 'import oldpkg; print(oldpkg.ANSWER, oldpkg.__cached__)' && "
                        "python -c 'import os, oldpkg; print(os.listdir(os.path.dirname(oldpkg.__cached__)))'",
                        timeout=60)
        assert r.exit_code == 0 and "42" in r.output and "__init__.cpython-3" in r.output, r.output
    finally:
        if backend == "docker":
            subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)
