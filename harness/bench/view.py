"""fixrl bench view: how long `fixrl view` takes to write the page of a large trajectories file,
and how long that page takes to open in headless Chromium, against a 100-episode page of the
same episodes measured in the same run (the ratio says how the page scales with the run).

The episodes are synthetic: random token ids, and message texts of the sizes a real episode has
(a system prompt shared by all, an issue per task, `turns` replies and observations). What it
does not measure: the tokenizer's decoding (`--tokenizer` adds it; give a model directory).
"""
from __future__ import annotations

import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.agent.transcript import save_jsonl
from fixrl.harness.bench.errors import BenchError
from fixrl.harness.view import load, load_decoder, write_page

BASELINE_EPISODES = 100
TARGET_OPEN_S = 2.0
"""The issue's bound: a 10,000-episode page opens in about two seconds."""


@dataclass
class Config:
    """`fixrl bench view`."""

    episodes: int = 10_000
    """Episodes in the synthetic file."""
    turns: int = 6
    """Assistant turns (and observations) per episode."""
    obs_chars: int = 1_500
    """Characters of each tool observation."""
    tasks: int = 100
    """Distinct tasks the episodes are spread over."""
    browser: bool = True
    """Open the pages in headless Chromium (needs chromium, chromedriver and selenium); off: writing only."""
    tokenizer: str | None = None
    """A model directory whose tokenizer decodes the trained tokens (None: per-turn marks)."""

    def validate(self) -> None:
        if self.episodes < BASELINE_EPISODES or self.turns < 1 or self.tasks < 1:
            raise BenchError(f"bench view: episodes ({self.episodes}) must be >= {BASELINE_EPISODES}, "
                             f"turns ({self.turns}) and tasks ({self.tasks}) >= 1")


def _words(rng: random.Random, chars: int) -> str:
    words = ["def", "return", "self", "value", "x", "assert", "==", "None", "import", "(", ")", "line", "\n"]
    out, n = [], 0
    while n < chars:
        w = rng.choice(words)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def synthetic(cfg: Config, seed: int = 0) -> list[Trajectory]:
    rng = random.Random(seed)
    system = _words(rng, 1_100)
    issues = [_words(rng, 300) for _ in range(cfg.tasks)]
    out = []
    for i in range(cfg.episodes):
        task = i % cfg.tasks
        ids, mask, spans = [rng.randrange(151_000) for _ in range(650)], [0] * 650, []
        messages = [{"role": "system", "content": system}, {"role": "user", "content": issues[task]}]
        for _ in range(cfg.turns):
            n = rng.randrange(20, 80)
            spans.append((len(ids), len(ids) + n))
            ids += [rng.randrange(151_000) for _ in range(n)]
            mask += [1] * n
            messages.append({"role": "assistant", "content": _words(rng, n * 4)})
            obs = _words(rng, cfg.obs_chars)
            m = len(obs) // 4
            ids += [rng.randrange(151_000) for _ in range(m)]
            mask += [0] * m
            messages.append({"role": "tool", "content": obs})
        outcome = rng.choice(["pass", "fail", "fail", "error"])
        info = {"outcome": outcome, "exit_status": "submitted" if outcome != "error" else "error",
                "turns": cfg.turns, "sample": i // cfg.tasks, "actions": ["read a.py", "edit a.py", "submit"],
                "reason": "" if outcome == "pass" else "tests failed", "diff": "--- a/a.py\n+++ b/a.py\n@@\n-x\n+y\n"}
        out.append(Trajectory(task_id=f"task-{task:04d}", token_ids=ids, assistant_mask=mask, turn_spans=spans,
                              messages=messages, reward=float(outcome == "pass"), info=info))
    return out


def _write(trajs: list[Trajectory], root: Path, name: str, decoder: Any) -> dict[str, float]:
    f = save_jsonl(trajs, root / f"{name}.jsonl.gz")
    t0 = time.perf_counter()
    written = write_page(load(f), root / f"{name}.html", decoder)
    return {"write_s": time.perf_counter() - t0, "mb": written.bytes / 1e6}


def _open(driver: Any, page: Path) -> dict[str, float]:
    """Seconds until the page's table is drawn (navigation start to the load event: the page's
    script runs before it), and milliseconds to open the first episode's transcript."""
    driver.get(page.as_uri())
    timing = driver.execute_script("const t = performance.timing; return [t.navigationStart, t.loadEventEnd];")
    open_ms = driver.execute_async_script("const done = arguments[arguments.length - 1], t = performance.now(); "
                                          "open(EP.length - 1).then(() => done(performance.now() - t));")
    rows = driver.execute_script("return document.querySelectorAll('#episodes tbody tr').length;")
    if not rows:
        raise BenchError(f"bench view: the page {page} drew no rows")
    return {"open_s": (timing[1] - timing[0]) / 1000.0, "episode_ms": float(open_ms)}


def _driver() -> Any:
    # selenium is a test extra: imported only when the pages are opened.
    from selenium import webdriver  # noqa: PLC0415
    from selenium.webdriver.chrome.options import Options  # noqa: PLC0415
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    browser, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not chromedriver:
        raise BenchError("bench view: no chromium / chromedriver on PATH (apt-get install chromium chromium-driver), "
                         "or --no-browser to time the writing only")
    opts = Options()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='fixrl-bench-view-')}")
    opts.binary_location = browser
    return webdriver.Chrome(options=opts, service=Service(chromedriver))


def measure(cfg: Config) -> dict[str, Any]:
    cfg.validate()
    decoder = load_decoder(cfg.tokenizer) if cfg.tokenizer else None
    trajs = synthetic(cfg)
    res: dict[str, Any] = {"episodes": cfg.episodes, "turns": cfg.turns, "tokens": decoder is not None}
    with tempfile.TemporaryDirectory(prefix="fixrl-bench-view-") as tmp:
        root = Path(tmp)
        base = _write(trajs[:BASELINE_EPISODES], root, "baseline", decoder)
        big = _write(trajs, root, "big", decoder)
        res.update({f"baseline_{k}": v for k, v in base.items()}, **big)
        if cfg.browser:
            driver = _driver()
            try:
                _open(driver, root / "baseline.html")  # the browser's own start-up out of both figures
                res.update({f"baseline_{k}": v for k, v in _open(driver, root / "baseline.html").items()})
                res.update(_open(driver, root / "big.html"))
            finally:
                driver.quit()
            res["open_ratio"] = res["open_s"] / max(res["baseline_open_s"], 1e-3)
    return res


def show(res: dict[str, Any], con: Any) -> None:
    t = Table(title=f"fixrl bench view ({res['episodes']} synthetic episodes of {res['turns']} turns)")
    t.add_column("page")
    for col in ("MB", "write s", "open s", "open an episode ms"):
        t.add_column(col, justify="right")
    for label, p in ((f"baseline: {BASELINE_EPISODES} episodes", "baseline_"), (f"{res['episodes']} episodes", "")):
        opened = res.get(f"{p}open_s")
        t.add_row(label, f"{res[f'{p}mb']:.1f}", f"{res[f'{p}write_s']:.2f}",
                  "-" if opened is None else f"{opened:.2f}",
                  "-" if opened is None else f"{res[f'{p}episode_ms']:.1f}")
    con.print(t)
    if "open_s" in res:
        ok = "met" if res["open_s"] <= TARGET_OPEN_S else "MISSED"
        con.print(f"open: {res['open_s']:.2f} s, {res['open_ratio']:.1f}x the {BASELINE_EPISODES}-episode page; "
                  f"target <= {TARGET_OPEN_S:.0f} s: {ok}")
