"""What a `fixrl view` page is made of, without a browser: the loader's errors, the reason of
each outcome, the trained-token runs decoded by the real tokenizer, pass@k of a bare file, and
the episode record's reason and diff written by a real evaluation."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from fixrl.harness.agent.trajectory import Trajectory
from fixrl.harness.cli import main
from fixrl.harness.view import ViewError, load, render
from fixrl.harness.view.payload import eval_figures, reason, transcript


def traj(task="t", **info) -> Trajectory:
    return Trajectory(task_id=task, token_ids=[1, 2, 3, 4], assistant_mask=[0, 1, 1, 0], turn_spans=[(1, 3)],
                      messages=[{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "ab"}],
                      info=info)


def write(path: Path, trajs: list[Trajectory]) -> Path:
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in trajs))
    return path


def test_bad_sources_name_the_path_and_the_fix(tmp_path, capsys):
    with pytest.raises(ViewError, match="no such file or directory .*GRPO run directory"):
        load(tmp_path / "missing")
    with pytest.raises(ViewError, match="neither a GRPO run .* nor an eval"):
        load(tmp_path)
    # the demo's directory holds its own results.json and runs in folders: the message names them
    demo = tmp_path / "demo"
    (demo / "grpo" / "trajectories").mkdir(parents=True)
    (demo / "eval_end").mkdir()
    (demo / "eval_end" / "results.json").write_text('{"tasks": [], "ks": [1]}')
    (demo / "results.json").write_text('{"minutes": 3}')
    with pytest.raises(ViewError, match="these folders in it are runs: eval_end, grpo"):
        load(demo)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(traj().to_dict()) + "\n{not json\n")
    with pytest.raises(ViewError, match=r"bad.jsonl:2: not JSON"):
        load(bad)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"task_id": "t"}\n' * 50)[:40])
    with pytest.raises(ViewError, match="cut.jsonl.gz: cannot be read"):
        load(cut)
    assert main(["view", str(bad)]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    good = write(tmp_path / "good.jsonl", [traj()])
    assert main(["view", str(good), "--out", str(tmp_path), "--no-tokens"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["view", str(good), "--no-tokens"]) == 0 and (tmp_path / "good.html").is_file()


def test_reason_of_each_outcome():
    assert reason(traj(outcome="pass")) == ""
    assert reason(traj(outcome="error", error="check sandbox failed")) == "check sandbox failed"
    assert reason(traj(outcome="fail", reason="tests failed: test_x")) == "tests failed: test_x"
    # records written before the reason was: the nearest thing they hold
    assert reason(traj(outcome="fail", rule_violations=["no-eval: a.py:3: eval"])).startswith("edit rules: no-eval")
    assert reason(traj(outcome="fail", check_tests={"t::a": "passed", "t::b": "tampered", "t::c": "failed"})) \
        == "check: t::b tampered (+1 more)"
    assert reason(traj(outcome="fail", exit_status="out_of_turns")) == "ended out_of_turns"


def test_trained_tokens_are_decoded_run_by_run(tiny_tokenizer):
    tok = tiny_tokenizer
    prompt = tok.encode("<|im_start|>user\nfix it<|im_end|>\n<|im_start|>assistant\n")
    choice, args = tok.encode('<tool_call>{"name": "read", '), tok.encode('"arguments": {"path": "a.py"}}</tool_call>')
    end = tok.encode("<|im_end|>")
    ids = prompt + choice + args + end
    a, b = len(prompt), len(ids)
    # the choice of the tool out of the loss, its arguments in it, the closing token unsampled
    mask = [0] * len(prompt) + [0] * len(choice) + [1] * len(args) + [0]
    t = Trajectory(task_id="t", token_ids=ids, assistant_mask=mask, turn_spans=[(a, b)],
                   messages=[{"role": "user", "content": "fix it"},
                             {"role": "assistant", "content": tok.decode(choice + args + end)}],
                   info={"cut_turns": [0]})
    shown = transcript(t, tok)
    block = shown["blocks"][1]
    assert block["runs"] == [[0, tok.decode(choice)], [1, tok.decode(args)], [0, "<|im_end|>"]]
    assert (block["tokens"], block["trained"], block["cut"]) == (b - a, len(args), True)
    assert shown["stray_trained"] == 0 and shown["trained"] == len(args)
    # a token in the loss outside every assistant turn is an anomaly the page shows
    t.assistant_mask[0] = 1
    assert transcript(t, tok)["stray_trained"] == 1
    # without a tokenizer: the message as written, with its counts
    plain = transcript(t)["blocks"][1]
    assert "runs" not in plain and plain["trained"] == len(args) and plain["text"].startswith("<tool_call>")


def test_pass_matrix_and_passk_of_a_bare_file(tmp_path):
    outcomes = {"a": ["pass", "fail", "fail", "error"], "b": ["fail", "fail", "fail", "fail"]}
    trajs = [traj(task, outcome=o, sample=j) for task, os in outcomes.items() for j, o in enumerate(os)]
    src = load(write(tmp_path / "e.jsonl", trajs))
    ev = eval_figures(src)
    assert ev["matrix"]["a"] == [[0, "pass", 0], [1, "fail", 1], [2, "fail", 2], [3, "error", 3]]
    assert ev["ks"] == [1, 2]  # task a has 3 scored episodes: pass@4 is undefined
    p1 = ev["passk"][0]
    assert p1["k"] == 1 and p1["mean"] == pytest.approx((1 / 3 + 0) / 2) and p1["tasks"] == 2
    assert p1["low"] <= p1["mean"] <= p1["high"]


def test_transcripts_are_inert_and_apart_from_the_table(tmp_path):
    t = traj(outcome="fail", reason="</script><b>x</b>")
    html = render(load(write(tmp_path / "x.jsonl", [t])))
    assert "</script><b>" not in html and "\\u003c/script>\\u003cb>" in html
    assert html.count('<script type="application/gzip" id="t') == 1


@pytest.mark.slow
def test_a_real_eval_records_the_reason_and_the_diff(eval_run):
    src = load(eval_run)
    assert src.kind == "eval" and len(src.episodes) == 4
    for e in src.episodes:
        info = e.traj.info
        assert info.outcome == "pass" and info.reason == ""
        assert info.diff.startswith("--- a/") and "\n+" in info.diff and "\n-" in info.diff
    ev = eval_figures(src)
    assert [p["k"] for p in ev["passk"]] == [1, 2] and ev["passk"][0]["mean"] == 1.0
