"""Episode files (envs/replay.py) replayed through the agent's tools on every backend: each
attack under episodes/attacks/ must earn 0 without an `error`, each honest fix under
episodes/honest/ must earn 1 with no rule refusal or violation (a false 0 is as bad as a false 1).

The files are data: an attack written by someone who never read the guard is added as a file,
and `fixrl tasks replay FILE --backend B` runs the same replay outside the tests.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixrl.envs.replay import load_episode, load_suite_of, replay
from fixrl.sandbox.pool import SandboxPool

HERE = Path(__file__).parent / "episodes"
FILES = sorted(HERE.glob("*/*.yaml"))
BACKENDS = ["local", "forking", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module")
def suites():
    cache: dict[str, object] = {}

    def get(episode):
        if episode.suite not in cache:
            cache[episode.suite] = load_suite_of(episode)
        return cache[episode.suite]
    return get


@pytest.fixture(scope="module")
def forking_checks():
    with SandboxPool(1, backend="local") as pool:  # its check sandboxes fork pytest
        yield pool.check_sandbox


def test_there_are_files_of_both_kinds():
    assert {p.parent.name for p in FILES} == {"attacks", "honest"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_episode_earns_what_it_must(path, backend, suites, request):
    if backend == "docker":
        request.getfixturevalue("docker_available")
    checks = request.getfixturevalue("forking_checks") if backend == "forking" else None
    episode = load_episode(path)
    reward, info = replay(episode, suites(episode), "local" if backend == "forking" else backend, checks)
    assert info.outcome != "error", (episode.kind, info.outcome, info.error)
    assert reward == episode.expect, (episode.kind, episode.note, info.outcome, info.error)
    if episode.expect == 1:
        assert info.rule_refusals == 0 and not info.rule_violations, (episode.kind, info.rule_violations)


def test_rules_check_judges_honest_episodes_on_the_host(tmp_path, capsys):
    """`fixrl tasks rules-check --episodes` over the honest corpus refuses none (the same judge an
    edit meets), and names an episode whose edit the rules refuse."""
    from fixrl.harness.cli import main as fixrl

    assert fixrl(["tasks", "rules-check", "--episodes", str(HERE / "honest")]) == 0
    assert " 0 of " in capsys.readouterr().out
    source = HERE / "honest" / "stdlib-import-operator.yaml"
    (tmp_path / "ok.yaml").write_text(source.read_text())
    (tmp_path / "gc.yaml").write_text(source.read_text().replace("import operator\n", "import operator, gc\n"))
    assert fixrl(["tasks", "rules-check", "--episodes", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "gc.yaml" in out and "ok.yaml" not in out and "imports `gc`" in out
