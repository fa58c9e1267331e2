"""Fixtures of the view tests: a two-step GRPO run and an eval on the tiny suite (made once per
session), and a headless Chromium driven by selenium (Debian's chromium and chromium-driver)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest


def coin_reward(info) -> float:
    """1 or 0 by the name the function was renamed to in the episode: differs between the episodes
    of a group, so a random tiny model gets mixed groups and non-zero advantages."""
    return float(zlib.crc32(",".join(sorted((info.renamed or {}).values())).encode()) % 2)


@pytest.fixture(scope="session")
def grpo_run(tiny_model, tiny_suite_dir, tmp_path_factory) -> Path:
    from fixrl.train.grpo import run_grpo
    from fixrl.train.resolve import make_config

    out = tmp_path_factory.mktemp("view") / "grpo"
    run_grpo(make_config("dynamic_mean", model=str(tiny_model), suite=str(tiny_suite_dir), out=str(out),
                         num_generations=4, max_turns=2, max_new_tokens=12, dynamic_sampling=False,
                         groups_per_rollout=2, tasks_per_step=2, steps=2, eval_every=0, save_every=0,
                         reward=coin_reward, lora_rank=4, seed=0, tensorboard=False))
    return out


@pytest.fixture(scope="session")
def eval_run(tiny_suite_dir, tmp_path_factory) -> Path:
    """The oracle policy (the reference fix, tokenised like a model's turns) on the train split:
    passes, diffs and masks."""
    out = tmp_path_factory.mktemp("view") / "eval"
    r = subprocess.run([sys.executable, "-m", "fixrl.harness.cli", "eval", "--policy", "oracle", "--suite",
                        str(tiny_suite_dir), "--split", "train", "-n", "2", "-k", "1,2", "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1500,1000"]


def chromium_paths() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (fresh profile, no network services); its console log is read by the tests."""
    why = None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        why = "selenium is not installed (pip install 'fixrl[test]')"
    paths = chromium_paths()
    if why is None and paths is None:
        why = "no chromium / chromedriver (apt-get install chromium chromium-driver, or `make chromium`)"
    if why:
        pytest.fail(why) if os.environ.get("CI") else pytest.skip(why)
    profile = tempfile.mkdtemp(prefix="fixrl-chromium-")
    opts = Options()
    for flag in CHROME_FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.binary_location = paths[0]
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(paths[1]))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
