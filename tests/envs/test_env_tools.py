"""Tools, bad tool input and budgets, against real local sandboxes."""
from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from fixrl.envs import Malformed, Tool, ToolCall, ToolError, register_tool
from fixrl.envs.env import truncate
from fixrl.envs.tools import TOOLS, get_tools, summarize_test_output


def obs(env, name, **args):
    return env.step(ToolCall(name, args)).observation


def test_schemas_are_openai_functions():
    for tool in get_tools(["read", "test", "edit", "submit", "list", "search"]):
        s = tool.schema()
        assert s["type"] == "function"
        fn = s["function"]
        assert fn["name"] == tool.name and fn["description"]
        params = fn["parameters"]
        assert params["type"] == "object"
        assert "title" not in str(params)
        for prop in params["properties"].values():
            assert "anyOf" not in prop and "type" in prop and "description" in prop
    read = TOOLS["read"].schema()["function"]["parameters"]
    assert read["required"] == ["path"]
    assert read["properties"]["start"]["type"] == "integer"
    assert TOOLS["edit"].schema()["function"]["parameters"]["required"] == ["path", "old", "new"]
    assert TOOLS["submit"].schema()["function"]["parameters"]["required"] == []


def test_register_tool_and_tool_sets(make_env):
    class WcArgs(BaseModel):
        path: str = Field(description="file")

    def wc(env, args):
        from fixrl.envs.tools import read_text, resolve_path

        text = read_text(env, resolve_path(env, args.path))
        if not text:
            raise ToolError("empty file")
        return f"{len(text.splitlines())} lines"

    tool = Tool("wc", "Count lines of a file.", WcArgs, wc)
    register_tool(tool, replace=True)
    with pytest.raises(ValueError, match="already registered"):
        register_tool(tool)
    with pytest.raises(ValueError, match="tool name"):
        register_tool(Tool("bad name", "x", WcArgs, wc))
    with pytest.raises(ValueError, match="unknown tool"):
        make_env(tools=["read", "nosuchtool"])

    env = make_env(tools=["read", "wc", "submit"])
    _, schemas = env.reset()
    assert [s["function"]["name"] for s in schemas] == ["read", "wc", "submit"]
    assert obs(env, "wc", path="pkg/core.py").endswith("lines")
    assert obs(env, "wc", path="../x").startswith("Error: path '../x' is outside the workspace")
    # the suite's tool set applies when the config does not choose one
    env2 = make_env()
    assert env2.tool_names == ["read", "test", "edit", "submit", "list", "search"]


def test_reset_messages(make_env):
    env = make_env(max_turns=5, max_edits=1)
    messages, schemas = env.reset()
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    for word in ("read", "test", "edit", "submit", "5 tool calls", "1 edit"):
        assert word in system
    assert messages[1]["content"] == env.task.issue
    assert len(schemas) == 6
    q = make_env("clamp-question")
    assert "answer" in q.reset()[0][0]["content"]
    short = make_env(max_turns=5, system_prompt="Tools: {tools}; {max_turns} calls{edits}.", tool_schemas=False)
    messages, schemas = short.reset()
    assert schemas == [] and messages[0]["content"].startswith("Tools: `read`, `test`") and "5 calls" in messages[0]["content"]


def test_read_edit_list_search_and_bad_input(make_env):
    env = make_env(max_malformed=100, max_turns=100)
    env.reset()
    out = obs(env, "read", path="pkg/core.py")
    assert out.startswith("pkg/core.py (")
    assert "   4  def clamp(x, lo, hi):" in out
    out = obs(env, "read", path="/workspace/pkg/core.py", start=4, end=5)
    assert out.splitlines()[0] == "pkg/core.py (lines 4-5 of 23)"
    assert len(out.splitlines()) == 3
    assert "past the end" in obs(env, "read", path="pkg/core.py", start=999)
    assert "is a directory" in obs(env, "read", path="pkg")
    assert "does not exist" in obs(env, "read", path="pkg/nope.py")
    # bad arguments name the argument; unknown tools list the tools
    assert "missing argument `path`" in obs(env, "read")
    assert "argument `start`" in obs(env, "read", path="pkg/core.py", start="abc")
    assert "argument `start`" in obs(env, "read", path="pkg/core.py", start=0)
    assert "unexpected argument `pth`" in obs(env, "read", path="pkg/core.py", pth="x")
    assert "must be a JSON object" in env.step(ToolCall("read", ["pkg/core.py"])).observation
    out = obs(env, "frobnicate", x=1)
    assert "unknown tool 'frobnicate'" in out and "read, test, edit" in out
    assert env.step(Malformed("no <tool_call> tag found")).observation == "Error: no <tool_call> tag found"
    # paths outside the workspace: `..`, absolute, symlinks (file and directory)
    env.sb.exec("ln -s /etc/passwd pkg/passwd.py && ln -s / pkg/root && ln -s core.py pkg/alias.py", timeout=10)
    assert "line break" in obs(env, "read", path="pkg/core.py\n../../etc/passwd")
    for bad in ("../etc/passwd", "pkg/../../etc/passwd", "/etc/passwd", "/workspace/../etc/passwd",
                "pkg/passwd.py", "pkg/root/etc/passwd"):
        out = obs(env, "read", path=bad)
        assert "outside the workspace" in out, (bad, out)
        assert "root:" not in out
        assert "outside the workspace" in obs(env, "edit", path=bad, old="root", new="x")
    assert "def clamp" in obs(env, "read", path="pkg/alias.py")  # a symlink inside is fine
    assert "outside the workspace" in obs(env, "list", path="pkg/root")
    assert "outside the workspace" in obs(env, "search", pattern="root", path="pkg/root/etc")
    # edit errors say which problem and how many matches
    out = obs(env, "edit", path="pkg/core.py", old="return max(lo, max(x, hi)) ", new="x")
    assert "0 matches" in out and "different surrounding whitespace" in out
    out = obs(env, "edit", path="pkg/core.py", old="return", new="yield")
    assert "ambiguous" in out and "3 matches" in out and "lines 6, 14, 23" in out
    assert "nothing would change" in obs(env, "edit", path="pkg/core.py", old="x", new="x")
    assert "`old` is empty" in obs(env, "edit", path="pkg/core.py", old="", new="x")
    assert env.info.edits == 0
    out = obs(env, "edit", path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")
    assert out.startswith("Edited pkg/core.py (lines 6-6") and "return max(lo, min(x, hi))" in out
    assert "min(x, hi)" in env.sb.read_file("pkg/core.py")
    assert env.info.edits == 1
    files = obs(env, "list").splitlines()
    assert "pkg/core.py" in files and "tests/test_public.py" in files
    assert obs(env, "search", pattern="def clamp").splitlines() == ["pkg/core.py:4:def clamp(x, lo, hi):"]
    assert "pkg/report.py:1:" in obs(env, "search", pattern="^from", regex=True)
    assert obs(env, "search", pattern="zzz_nothing").startswith("No matches")
    info = env.info
    assert info.malformed == 7  # 5 bad-argument calls, 1 unknown tool, 1 Malformed
    assert info.reads == 3 and info.turns == len(info.actions)
    assert "read /workspace/pkg/core.py:4-5" in info.actions and "unknown frobnicate" in info.actions


def test_test_tool_is_concise(make_env):
    env = make_env()
    env.reset()
    out = obs(env, "test")
    lines = out.splitlines()
    assert lines[0] == "Tests FAILED (exit status 1)."
    assert lines[1].startswith("2 failed, 2 passed")
    assert any(ln.startswith("FAILED tests/test_public.py::test_clamp_inside") for ln in lines)
    assert any(ln.startswith("E ") for ln in lines)
    assert len(out) < 1500
    obs(env, "edit", path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")
    out = obs(env, "test")
    assert out.startswith("Tests PASSED (exit status 0).\n4 passed")


def test_summarize_test_output_caps_and_non_pytest():
    body = "\n".join(f"E   line {i}" for i in range(30))
    text = f"x.py F\n{body}\nx.py:3: AssertionError\nFAILED x.py::t - boom\n1 failed in 0.1s\n"
    out = summarize_test_output(text, 1, False, 0.1)
    assert "E   line 7" in out and "E   line 8" not in out and "E   ..." in out
    # the summary without its duration: the same code gives the same observation
    assert "x.py:3: AssertionError" in out and out.splitlines()[1] == "1 failed"
    again = summarize_test_output(text.replace("0.1s", "7.25s (0:00:07)"), 1, False, 7.3)
    assert again == out
    out = summarize_test_output("ok\n" * 500, 0, False, 1.0, max_lines=10)
    assert out.startswith("Tests PASSED") and len(out.splitlines()) == 11
    assert summarize_test_output("", -1, True, 30).startswith("Tests TIMED OUT after 30s")


def test_observation_cap_has_visible_marker(make_env):
    assert truncate("a" * 50, 100) == "a" * 50
    cut = truncate("a" * 300 + "b" * 300, 120)
    assert "[output truncated: 480 characters omitted]" in cut
    assert cut.startswith("a" * 80) and cut.endswith("b" * 40)
    env = make_env(obs_max_chars=200)
    env.reset()
    out = obs(env, "read", path="pkg/core.py")
    assert "[output truncated:" in out and len(out) < 300


def test_turn_budget(make_env):
    env = make_env(max_turns=2)
    env.reset()
    assert not env.step(ToolCall("read", {"path": "pkg/core.py"})).done
    assert env.step(ToolCall("read", {"path": "pkg/core.py"})).done
    assert env.info.exit_status == "out_of_turns"
    after = env.step(ToolCall("read", {"path": "pkg/core.py"}))
    assert after.done and env.info.turns == 2


def test_edit_budget_refuses_and_uses_a_turn(make_env):
    env = make_env(max_edits=1)
    env.reset()
    obs(env, "edit", path="pkg/core.py", old="max(x, hi)", new="max(x, hi) + 0")
    before = env.sb.read_file("pkg/core.py")
    out = obs(env, "edit", path="pkg/core.py", old="max(x, hi) + 0", new="min(x, hi)")
    assert out.startswith("Edit refused: the edit budget of this episode (1 edit) is used up")
    assert env.sb.read_file("pkg/core.py") == before
    assert (env.info.edits, env.info.refused_edits, env.info.turns) == (1, 1, 2)
    assert env.info.actions[-1] == "edit pkg/core.py (refused)"
    assert env.edits_left == 0


def test_failed_edits_count_against_the_budget_when_the_task_says_so(make_env):
    free = make_env(max_edits=1)
    free.reset()
    assert "not found" in obs(free, "edit", path="pkg/core.py", old="no such text", new="x")
    assert free.edits_left == 1 and free.info.failed_edits == 1  # by default a failed edit is free
    counted = make_env(max_edits=1)
    counted.task = counted.task.model_copy(
        update={"limits": counted.task.limits.model_copy(update={"count_failed_edits": True})})
    assert "(an edit whose `old` text is not found counts too)" in counted.reset()[0][0]["content"]
    assert "not found" in obs(counted, "edit", path="pkg/core.py", old="no such text", new="x")
    assert counted.edits_left == 0
    before = counted.sb.read_file("pkg/core.py")
    out = obs(counted, "edit", path="pkg/core.py", old="max(x, hi)", new="min(x, hi)")
    assert out.startswith("Edit refused: the edit budget of this episode (1 edit (failed edits count))")
    assert counted.sb.read_file("pkg/core.py") == before
    assert (counted.info.edits, counted.info.failed_edits, counted.info.refused_edits) == (0, 1, 1)


def test_malformed_calls_end_the_episode(make_env):
    env = make_env(max_malformed=2)
    env.reset()
    assert not env.step(Malformed("bad json")).done
    res = env.step(ToolCall("nope", {}))
    assert res.done and "Too many malformed" in res.observation
    reward, info = env.finish()
    assert info.exit_status == "malformed" and info.outcome == "fail" and reward == 0.0


def test_tool_timeout(make_env):
    env = make_env(tool_timeouts={"test": 2})
    env.reset()
    # The loop needs no import: an `import time` edit is refused by the edit rules (the
    # repository never imports time), and a cold pytest start can outlast 2 s on its own.
    edited = obs(env, "edit", path="pkg/report.py", old="from pkg.core import clamp, scale\n",
                 new="from pkg.core import clamp, scale\nwhile True:\n    pass\n")
    assert not edited.startswith("Edit refused"), edited
    out = obs(env, "test")
    assert out.startswith("Tests TIMED OUT after 2s"), out[:500]
    # cut off, not waited out: the sandbox still answers (no time assertion: machines are loaded)
    assert "clamp" in obs(env, "read", path="pkg/report.py")


def test_end_out_of_tokens_and_sandbox_failure(make_env):
    env = make_env()
    env.reset()
    env.end("out_of_tokens")
    assert env.done and env.step(ToolCall("test", {})).observation == "The episode is over."
    reward, info = env.finish()
    assert info.exit_status == "out_of_tokens" and info.outcome == "fail"
    assert env.finish() == (reward, info)  # idempotent

    env = make_env()
    env.reset()
    env.sb.close()  # the sandbox dies under the agent
    res = env.step(ToolCall("read", {"path": "pkg/core.py"}))
    assert res.done and "sandbox failed" in res.observation
    reward, info = env.finish()
    assert (reward, info.exit_status, info.outcome) == (0.0, "error", "error")
    assert "sandbox" in info.error
