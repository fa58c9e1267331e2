"""Episode files (envs/replay.py) replayed through the agent's tools on every backend: each
attack under episodes/attacks/ must earn 0 without an `error`, each honest fix under
episodes/honest/ must earn 1 with no rule refusal or violation (a false 0 is as bad as a false 1).

The files are data: an attack written by someone who never read the guard is added as a file,
and `fixrl tasks replay FILE --backend B` runs the same replay outside the tests.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixrl.envs.replay import load_episode, load_suite_of, replay, static_violations
from fixrl.sandbox.pool import SandboxPool

HERE = Path(__file__).parent / "episodes"
FILES = sorted(HERE.glob("*/*.yaml"))
DOCKER = pytest.param("docker", marks=pytest.mark.docker)


def _plan() -> tuple[list[tuple[Path, str]], dict[str, list[str]]]:
    """Which file runs on which backend. Every honest file and every attack the edit rules let
    through (judged on the host, as the `edit` tool does) runs on the forking check that rollouts
    use; one file of each kind (the first the rules let through, else the first) also runs on
    local and Docker, so every class is shown closed on all three backends. An attack the rules
    refuse at the edit is refused the same way on every backend (the rules run on the host)."""
    suites: dict[str, object] = {}
    forking, first_of_kind, through = [], {}, {}
    for path in FILES:
        ep = load_episode(path)
        suite = suites.setdefault(ep.suite, load_suite_of(ep))
        passes_rules = not static_violations(ep, suite)
        through[str(path)] = passes_rules
        if ep.expect == 1 or passes_rules:
            forking.append(path)
        key = f"{path.parent.name}/{ep.kind}"
        if key not in first_of_kind or (passes_rules and not through[str(first_of_kind[key])]):
            first_of_kind[key] = path
    runs = [(p, "forking") for p in forking]
    runs += [(p, b) for p in sorted(first_of_kind.values()) for b in ("local", "docker")]
    return runs, {k: [str(v)] for k, v in first_of_kind.items()}


RUNS, KINDS = _plan()


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


def test_there_are_files_of_both_kinds_and_every_kind_runs_on_every_backend():
    assert {p.parent.name for p in FILES} == {"attacks", "honest"}
    for files in KINDS.values():
        assert {b for p, b in RUNS if str(p) in files} == {"forking", "local", "docker"} or \
            {b for p, b in RUNS if str(p) in files} == {"local", "docker"}


@pytest.mark.parametrize(("path", "backend"), [(p, b) if b != "docker" else pytest.param(p, b, marks=pytest.mark.docker)
                                               for p, b in RUNS],
                         ids=[f"{p.parent.name}/{p.stem}-{b}" for p, b in RUNS])
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
