"""`fixrl bench view` end to end on a small synthetic run: both pages written (the big one
larger), opened in headless Chromium when it is installed, the figures and the ratio reported."""
from __future__ import annotations

import shutil

import pytest

from fixrl.harness.bench import view
from fixrl.harness.bench.errors import BenchError


def test_bench_view_small(capsys):
    with pytest.raises(BenchError, match="episodes"):
        view.measure(view.Config(episodes=10))
    browser = shutil.which("chromium") is not None and shutil.which("chromedriver") is not None
    try:
        import selenium  # noqa: F401
    except ImportError:
        browser = False
    res = view.measure(view.Config(episodes=300, turns=2, tasks=10, browser=browser))
    assert res["mb"] > 2 * res["baseline_mb"] > 0 and res["write_s"] > 0
    if browser:
        assert res["open_s"] > 0 and res["episode_ms"] > 0 and res["open_ratio"] > 0
    from fixrl.harness.agent.transcript import make_console

    view.show(res, make_console())
    assert "300 episodes" in capsys.readouterr().out
