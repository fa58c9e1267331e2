"""The wheel as a user installs it: built from this tree, installed (not editable) into a fresh
virtual environment, it puts one top-level package, `fixrl`, in the environment, ships the
built-in suites and the tiny checkpoint's data as package data, and runs `fixrl --help` and a scripted rollout."""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_wheel_installs_one_namespace_and_runs(tmp_path):
    # Built from a copy of the tracked files: setuptools writes build/ into the tree it builds.
    src, dist = tmp_path / "src", tmp_path / "dist"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    for rel in filter(None, files):
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(src)], check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = dist.glob("fixrl-*.whl")
    env = tmp_path / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", str(env)], check=True, timeout=120)
    py = env / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    # pytest in the environment itself: the local sandbox runs the checks with this interpreter
    # and sees only its own site-packages.
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "pytest==9.2.0"],
                   check=True, capture_output=True, text=True, timeout=300)
    # The other dependencies (torch alone is gigabytes) come from this test's environment, added
    # at the end of sys.path by a .pth line: its own `fixrl` is an editable install whose finder
    # is only activated by a .pth file of that directory, which a path line does not process.
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "zz_fixrl_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    top = subprocess.run([py, "-c", "import importlib.util as u, fixrl.sandbox, fixrl.tasks.suites as s; "
                                    "print(fixrl.sandbox.__file__); print(s.BUILTIN_SUITE.is_dir()); "
                                    "print([m for m in ('sandbox', 'tasks', 'envs', 'harness', 'train', 'evals') "
                                    "if u.find_spec(m)])"],
                         check=True, capture_output=True, text=True, cwd=tmp_path).stdout.split("\n")
    assert top[0].startswith(str(site)) and top[1] == "True" and top[2] == "[]", top
    # The tiny checkpoint's chat template and the tiny suite's sources are package data too.
    tiny = subprocess.run([py, "-c", "import sys; from fixrl.harness.model.tiny import make_tiny_suite; "
                                     "print(sorted(p.name for p in (make_tiny_suite(sys.argv[1]) / 'checks').iterdir()))",
                           str(tmp_path / "tiny")], check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    assert tiny.split() == ["['test_add_one_off.py',", "'test_clamp_high.py',", "'test_total_init.py']"], tiny
    fixrl = env / "bin" / "fixrl"
    assert "rollout" in subprocess.run([fixrl, "--help"], check=True, capture_output=True, text=True,
                                       cwd=tmp_path).stdout
    run = subprocess.run([fixrl, "rollout", "--policy", "oracle", "--suite", "builtin", "--task", "hand.median.unsorted",
                          "--quiet", "--save", str(tmp_path / "t.jsonl")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert '"outcome": "pass"' in (tmp_path / "t.jsonl").read_text()
    # `fixrl view`'s template, style and script are package data: the page is whole
    view = subprocess.run([fixrl, "view", str(tmp_path / "t.jsonl"), "--no-tokens"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert view.returncode == 0, view.stdout + view.stderr
    page = (tmp_path / "t.html").read_text()
    assert "async function open(" in page and ".tok-trained" in page and "__JS__" not in page
