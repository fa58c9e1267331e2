"""`fixrl view` pages read in a real headless Chromium: a two-step GRPO run and an eval render
without console errors, the filters change the rows, an episode opens with its trained tokens
marked, its diff and verdict; the group view shows the advantages; the eval's pass matrix and
pass@k are there; a run's text cannot run as script. Writes docs/img/view.png when
FIXRL_VIEW_SCREENSHOT names a path."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixrl.harness.cli import main

pytestmark = pytest.mark.slow


def page(tmp_path: Path, source: Path, name: str) -> Path:
    out = tmp_path / name
    assert main(["view", str(source), "--out", str(out)]) == 0
    return out


def visit(browser, path: Path) -> None:
    browser.get(path.as_uri())
    browser.get_log("browser")  # start each page with an empty log


def errors(browser) -> list:
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


def rows(browser) -> list:
    return browser.find_elements("css selector", "#episodes tbody tr")


def count(browser) -> str:
    return browser.find_element("id", "count").text


def opened(browser, i: int | None = None):
    """The detail panel once the page has inflated and drawn the clicked episode (asynchronous)."""
    from selenium.webdriver.support.ui import WebDriverWait

    def done(b):
        got = b.find_element("id", "detail").get_attribute("data-opened")
        return got and (i is None or got == str(i))

    WebDriverWait(browser, 10).until(done)
    return browser.find_element("id", "detail")


def choose(browser, select_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", select_id)).select_by_value(value)


def test_grpo_run_page(browser, grpo_run, tmp_path):
    from selenium.webdriver.common.keys import Keys

    html = page(tmp_path, grpo_run, "grpo.html")
    text = html.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text  # nothing to fetch
    browser.get(html.as_uri())
    assert errors(browser) == []
    assert len(list((grpo_run / "trajectories").iterdir())) == 2  # two step files
    assert count(browser) == "16 of 16 episodes"  # 2 steps x 2 groups x 4 generations
    assert len(rows(browser)) == 16

    choose(browser, "filter-step", "2")
    assert count(browser) == "8 of 16 episodes" and len(rows(browser)) == 8
    choose(browser, "filter-step", "")
    box = browser.find_element("id", "filter-text")
    box.send_keys("no-such-task-anywhere")
    assert count(browser) == "0 of 16 episodes" and rows(browser) == []
    box.send_keys(Keys.CONTROL, "a", Keys.BACKSPACE)  # typed, so the page gets its input events
    assert count(browser) == "16 of 16 episodes"
    choose(browser, "filter-outcome", "fail")

    # sorting by advantage puts the lowest first
    browser.find_element("css selector", "th[data-key=advantage]").click()
    keys = [th.get_attribute("data-key") for th in browser.find_elements("css selector", "#episodes th")]
    column = keys.index("advantage")
    advs = [float(r.find_elements("tag name", "td")[column].text) for r in rows(browser)]
    assert len(advs) == 16 and advs == sorted(advs) and advs[0] < advs[-1]

    rows(browser)[0].click()
    detail = opened(browser)
    trained = detail.find_elements("css selector", ".msg.assistant .tok-trained")
    assert trained and all(t.text or t.get_attribute("textContent") for t in trained)
    assert "tokens trained" in detail.text and "Verdict" in detail.text
    # the group side by side, with advantages that differ (the coin reward mixes each group)
    cards = detail.find_elements("css selector", ".group-card")
    assert len(cards) == 4
    group_advs = {c.find_element("css selector", ".adv").text for c in cards}
    assert len(group_advs) == 2 and all(a != "none" for a in group_advs)

    browser.find_element("id", "tabbtn-groups").click()
    assert len(browser.find_elements("css selector", "#groups .group-row")) == 2
    browser.find_element("id", "tabbtn-metrics").click()
    charts = browser.find_elements("css selector", "#metrics .chart")
    assert len(charts) > 10 and charts[0].find_elements("css selector", "polyline")
    assert errors(browser) == []


def test_eval_page(browser, eval_run, tmp_path):
    html = page(tmp_path, eval_run, "eval.html")
    browser.get(html.as_uri())
    assert errors(browser) == []
    assert count(browser) == "4 of 4 episodes"
    choose(browser, "filter-outcome", "pass")
    assert len(rows(browser)) == 4
    choose(browser, "filter-exit", "submitted")
    assert len(rows(browser)) == 4
    rows(browser)[0].click()
    detail = opened(browser)
    adds = [a.text for a in detail.find_elements("css selector", ".diff .add")]
    assert any(a.startswith("+") and "+++" not in a for a in adds), adds  # the oracle's fix, as a diff
    assert detail.find_elements("css selector", ".msg.assistant .tok-trained")
    assert "hidden_pass" in detail.text

    browser.find_element("id", "tabbtn-passes").click()
    cells = browser.find_elements("css selector", "#matrix-table td.cell")
    assert len(cells) == 4 and all("pass" in c.get_attribute("class") for c in cells)
    passk = browser.find_element("id", "passk-table").text
    assert "pass@1" in passk and "pass@2" in passk and "[1.000, 1.000]" in passk
    cells[1].click()  # a cell opens its episode
    assert "sample 1" in opened(browser).text and browser.find_element("css selector", "#episodes tbody tr.sel")
    assert errors(browser) == []
    shot = os.environ.get("FIXRL_VIEW_SCREENSHOT")
    if shot:
        browser.save_screenshot(shot)


def test_text_from_a_run_never_runs_as_script(browser, tmp_path):
    from fixrl.harness.agent.trajectory import Trajectory
    from fixrl.harness.agent.transcript import save_jsonl

    evil = "</script><script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"
    traj = Trajectory(task_id=evil, token_ids=[1, 2, 3], assistant_mask=[0, 1, 1], turn_spans=[(1, 3)],
                      messages=[{"role": "user", "content": evil}, {"role": "assistant", "content": evil}],
                      info={"outcome": "fail", "reason": evil, "diff": "+" + evil, "actions": [evil]})
    f = save_jsonl([traj], tmp_path / "evil.jsonl")
    html = page(tmp_path, f, "evil.html")
    browser.get(html.as_uri())
    rows(browser)[0].click()
    assert evil in opened(browser).text
    assert browser.execute_script("return window.pwned === undefined")
    assert errors(browser) == []
