"""Episode files (envs/replay.py) replayed through the agent's tools on every backend: each
attack under episodes/attacks/ must earn 0 without an `error`, each honest fix under
episodes/honest/ must earn 1 with no rule refusal or violation (a false 0 is as bad as a false 1).

The files are data: an attack written by someone who never read the guard is added as a file,
and `fixrl tasks replay FILE --backend B` runs the same replay outside the tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from fixrl.envs.replay import Episode, load_episode, load_suite_of, replay, static_violations
from fixrl.sandbox.pool import SandboxPool

HERE = Path(__file__).parent / "episodes"
FILES = sorted(HERE.glob("*/*.yaml"))
# Only each file's `kind` is read at collection (YAML, no suite, no rules): which file of a kind
# runs on local and Docker is the plan's choice, made in the session.
KINDS = sorted({f"{p.parent.name}/{load_episode(p).kind}" for p in FILES})
MISMATCH = "the edit's `old` text occurs"
"""static_violations' words for an edit whose `old` text the host could not place: no refusal
by the rules (the edit tool may place it, e.g. through a `./` path), so such a file is replayed."""


@dataclass(frozen=True)
class Plan:
    """Which file runs where, judged once a session. Every honest file and every attack the edit
    rules do not refuse (judged on the host, as the `edit` tool does) runs on the forking check
    that rollouts use; an attack the rules refuse is refused the same way on every backend (the
    rules run on the host), so its verdict is its test. One file of each kind (the first the
    rules let through, else the first) also runs on local and Docker, so every class is shown
    closed on all three backends."""

    refusals: dict[str, list[str]]
    """Each file's refusals by the edit rules ([] for a file they let through)."""
    kind_of: dict[str, str]
    """Each file's `folder/kind`."""
    first_of_kind: dict[str, Path]
    """`folder/kind` -> the file that runs on local and Docker."""


def _refusals(episode: Episode, suite) -> list[str]:
    return [v for v in static_violations(episode, suite) if MISMATCH not in v]


@pytest.fixture(scope="session")
def suites():
    cache: dict[str, object] = {}

    def get(episode):
        if episode.suite not in cache:
            cache[episode.suite] = load_suite_of(episode)
        return cache[episode.suite]
    return get


@pytest.fixture(scope="session")
def plan(suites) -> Plan:
    refusals, kind_of, first_of_kind = {}, {}, {}
    for path in FILES:
        episode = load_episode(path)
        refusals[str(path)] = _refusals(episode, suites(episode))
        key = kind_of[str(path)] = f"{path.parent.name}/{episode.kind}"
        if key not in first_of_kind or (not refusals[str(path)] and refusals[str(first_of_kind[key])]):
            first_of_kind[key] = path
    return Plan(refusals, kind_of, first_of_kind)


@pytest.fixture(scope="module")
def forking_checks():
    with SandboxPool(1, backend="local") as pool:  # its check sandboxes fork pytest
        yield pool.check_sandbox


def _replay(path: Path, backend: str, suites, request) -> None:
    episode = load_episode(path)
    if backend == "docker":
        request.getfixturevalue("docker_available")
        if any(t.environment is not None for t in suites(episode).tasks):  # its image layer (cached)
            from fixrl.harness.cli import main as fixrl

            assert fixrl(["env", "build", str((path.parent / episode.suite).resolve()), "--backend", "docker"]) == 0
    checks = request.getfixturevalue("forking_checks") if backend == "forking" else None
    reward, info = replay(episode, suites(episode), "local" if backend == "forking" else backend, checks)
    assert info.outcome != "error", (episode.kind, info.outcome, info.error)
    assert reward == episode.expect, (episode.kind, episode.note, info.outcome, info.error)
    if episode.expect == 1:
        assert info.rule_refusals == 0 and not info.rule_violations, (episode.kind, info.rule_violations)


def test_there_are_files_of_both_kinds_and_every_kind_runs_on_every_backend(plan, suites):
    assert {p.parent.name for p in FILES} == {"attacks", "honest"}
    # An edit the host cannot place (a `./` path the edit tool resolves) is no refusal: replayed.
    dot = load_episode(HERE / "attacks" / "edit-conftest-dot-path.yaml")
    assert any(MISMATCH in v for v in static_violations(dot, suites(dot))) and not plan.refusals[str(dot.path)]
    assert sorted(plan.first_of_kind) == KINDS  # each has its local and Docker test
    for key, path in plan.first_of_kind.items():
        same_kind = [p for p in FILES if plan.kind_of[str(p)] == key]
        if any(not plan.refusals[str(p)] for p in same_kind):  # one the rules let through is shown
            assert not plan.refusals[str(path)], (key, path)


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}-forking" for p in FILES])
def test_episode_earns_what_it_must(path, plan, suites, request):
    """On the forking check; an attack the edit rules refuse earns 0 there by its refusal (the
    rules run on the host, before any check), which is what is asserted for it."""
    refused = plan.refusals[str(path)]
    if path.parent.name == "honest" or not refused:
        _replay(path, "forking", suites, request)
        return
    episode = load_episode(path)
    assert episode.expect == 0 and refused, (episode.kind, refused)


@pytest.mark.parametrize(("kind", "backend"), [(k, "local") if b == "local" else pytest.param(k, b, marks=pytest.mark.docker)
                                               for k in KINDS for b in ("local", "docker")],
                         ids=[f"{k}-{b}" for k in KINDS for b in ("local", "docker")])
def test_each_kind_earns_what_it_must_on_local_and_docker(kind, backend, plan, suites, request):
    _replay(plan.first_of_kind[kind], backend, suites, request)


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
