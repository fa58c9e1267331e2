"""The built-in suite that ships with fixrl: its shape (sizes, splits, families, limits), its
repository's own tests, and its tasks' validity (a sample here, every task in the slow test)."""
from __future__ import annotations

from collections import Counter

import pytest

from fixrl.tasks import load_suite
from fixrl.tasks.generate.mutate import OPERATORS, repair


@pytest.fixture(scope="module")
def suite(builtin_suite):
    return load_suite(builtin_suite)


def generated(suite):
    return [t for t in suite.tasks if "generated" in t.tags]


def hand(suite):
    return [t for t in suite.tasks if "hand" in t.tags]


def test_sizes(suite):
    assert len(generated(suite)) >= 60
    assert len(hand(suite)) >= 5
    questions = [t for t in suite.tasks if t.kind == "question"]
    assert len(questions) >= 2
    assert all(t.answer and not t.check.tests for t in questions)


def test_repository_has_enough_functions_and_tests(builtin_suite):
    from fixrl.tasks.generate.mutate import list_functions

    repo = builtin_suite / "repo"
    modules = sorted((repo / "minicalc").glob("*.py"))
    functions = [f for m in modules for f in list_functions(m.read_text())]
    assert len([m for m in modules if m.name != "__init__.py"]) >= 5
    assert len(functions) >= 30
    tests = sum(m.read_text().count("\ndef test_") for m in (repo / "tests").glob("test_*.py"))
    assert tests >= 150


def test_splits_are_disjoint_by_function(suite):
    train = {t.function for t in suite.split("train") if t.function}
    held = {t.function for t in suite.split("heldout") if t.function}
    assert train and held
    assert not train & held, f"functions in both splits: {sorted(train & held)}"
    share = len(suite.split("train")) / len(suite.tasks)
    assert 0.55 <= share <= 0.8


def test_families_are_spread(suite):
    fams = Counter(t.family for t in generated(suite))
    assert set(fams) <= set(OPERATORS)
    assert len(fams) >= 8, fams
    assert max(fams.values()) <= 0.25 * sum(fams.values()), fams
    assert set(suite.families) == set(fams)


def test_fix_tasks_rename_and_limits(suite):
    for t in suite.tasks:
        assert t.limits.max_turns == 8 and t.limits.max_edits == 1, t.id
        if t.kind == "fix":
            assert t.function and t.function in suite.rename_pool, t.id
            assert t.file and t.file.startswith("minicalc/"), t.id
            assert f"function:{t.function}" in t.tags


def test_issue_never_shows_the_bug_or_fix(suite):
    for t in generated(suite):
        changed = [line[1:].strip() for line in t.bug.splitlines()
                   if line[:1] in "+-" and not line.startswith(("+++", "---")) and len(line[1:].strip()) >= 6]
        for line in changed:
            assert line not in t.issue, (t.id, line)
        assert "Calling `" in t.issue or "does not raise" in t.issue, t.id


def test_generated_checks_name_their_tests(suite):
    for t in generated(suite):
        meta = t.metadata["generator"]
        assert meta["FAIL_TO_PASS"] and set(meta["FAIL_TO_PASS"]) <= set(t.check.tests)
        assert meta["op"] == t.family
        for path in {n.split("::")[0] for n in t.check.tests}:
            assert path in t.check.files


def test_blind_repair_fixes_only_some(suite):
    """The family's blind repair applied to the buggy file restores the clean one for some
    tasks and not for all: the suite rewards reading, not guessing."""
    from fixrl.tasks.format.loader import repo_path

    fixed = 0
    tasks = generated(suite)
    for t in tasks:
        clean = (repo_path(t) / t.file).read_text()
        buggy = _apply(clean, t.bug)
        fixed += repair(buggy, t.metadata["generator"]["qualname"], t.family) == clean
    assert 0 < fixed < 0.8 * len(tasks)


def _apply(text: str, patch: str) -> str:
    """Apply a one-file unified diff made by the generator (exact context)."""
    import re

    lines = text.splitlines(keepends=True)
    out, pos = [], 0
    plines = patch.splitlines(keepends=True)
    i = 0
    while i < len(plines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", plines[i])
        i += 1
        if not m:
            continue
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out.extend(lines[pos:start])
        pos = start
        while i < len(plines) and not plines[i].startswith("@@"):
            tag, body = plines[i][:1], plines[i][1:]
            if tag == " ":
                assert lines[pos] == body
                out.append(body)
                pos += 1
            elif tag == "-":
                assert lines[pos] == body
                pos += 1
            elif tag == "+":
                out.append(body)
            i += 1
    out.extend(lines[pos:])
    return "".join(out)


def test_repository_tests_pass_in_a_sandbox(builtin_suite):
    from fixrl.sandbox import open_sandbox

    with open_sandbox(builtin_suite / "repo", backend="local") as sb:
        res = sb.exec("python -m pytest -q", timeout=120)
    assert res.exit_code == 0, res.output[-2000:]
    assert " passed" in res.output and "failed" not in res.output


def _validate(suite, ids, repeats=1, jobs=2):
    from fixrl.tasks import validate_suite

    results = validate_suite(suite, backend="local", jobs=jobs, repeats=repeats, task_ids=ids)
    bad = {r.task_id: r.reasons for r in results if not r.ok}
    assert not bad, bad
    return results


def test_sample_of_tasks_validates(suite):
    """One generated task per split, one hand-written fix and one question, checked for real."""
    pick = [next(t.id for t in generated(suite) if t.split == "train"),
            next(t.id for t in generated(suite) if t.split == "heldout"),
            next(t.id for t in hand(suite) if t.kind == "fix"),
            next(t.id for t in suite.tasks if t.kind == "question")]
    assert len(_validate(suite, pick)) == 4


@pytest.mark.slow
def test_every_task_validates(suite):
    results = _validate(suite, None)
    assert len(results) == len(suite.tasks)
