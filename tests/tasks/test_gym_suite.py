"""The `gym` suite the demo trains on: its design claims, checked on the shipped files."""
from __future__ import annotations

import pytest

from fixrl.tasks import load_suite, materialize, validate_suite
from fixrl.tasks.suites import GYM_SUITE

# family -> the marker its bug leaves (never present in clean code)
MARKERS = {"swap_minmax": "min(", "flip_comparison": " > ", "off_by_one": "range(n)",
           "wrong_init": "total = 1", "wrong_arith": " - "}


@pytest.fixture(scope="module")
def gym():
    return load_suite(GYM_SUITE)


def test_gym_shape_and_split(gym):
    assert len(gym.tasks) == 376
    train, heldout = gym.split("train"), gym.split("heldout")
    assert (len(train), len(heldout)) == (355, 21)
    assert not {t.function for t in train} & {t.function for t in heldout}
    assert len({t.function for t in heldout}) == 10
    # held-out functions are hand-written, never generated: what carries over is the marker
    hand = {"gym/lists.py", "gym/numbers.py", "gym/ranges.py", "gym/scores.py", "gym/strings.py"}
    assert {t.file for t in heldout} == hand
    drills = {t.file for t in train} - hand
    assert len({t.function for t in train if t.file in drills}) == 100
    # the practice modules are named by words, as the hand-written ones are: the path a model
    # copies from the issue is no digit on most demonstrations
    assert len(drills) == 20 and all(f.removeprefix("gym/").removesuffix(".py").isalpha() for f in drills)
    # no family is a good blind guess on held-out tasks: 4 or 5 of 21 each
    assert sorted(sum(t.family == f for t in heldout) for f in MARKERS) == [4, 4, 4, 4, 5]
    # every function comes with two or more bugs of different families under one issue text, so
    # neither the function nor its file tells the fix
    by_function: dict[str, list] = {}
    for t in gym.tasks:
        by_function.setdefault(t.function, []).append(t)
    for function, tasks in by_function.items():
        assert len({t.family for t in tasks}) == len(tasks) >= 2, function
        assert len({t.issue for t in tasks}) == 1 and len({t.file for t in tasks}) == 1, function
    assert all(t.limits.max_edits == 1 and t.limits.count_failed_edits and t.function for t in gym.tasks)
    # each family's usual edit replaces its marker by the clean construct (build.py's FAMILIES)
    assert {f: e.old for f, e in gym.family_edits.items()} == MARKERS


def test_every_buggy_file_shows_exactly_its_familys_marker(gym, tmp_path):
    for task in gym.tasks:
        clean = (materialize(task, tmp_path / task.id / "clean", "clean") / task.file).read_text()
        buggy = (materialize(task, tmp_path / task.id / "buggy", "buggy") / task.file).read_text()
        assert all(marker not in clean for marker in MARKERS.values()), task.id
        counts = {f: buggy.count(m) for f, m in MARKERS.items()}
        assert counts == {f: int(f == task.family) for f in MARKERS}, (task.id, counts)
        # the issue names the function and its file, never the marker or the fixed line
        assert task.function in task.issue and task.file in task.issue
        bug_line = next(line for line in buggy.splitlines() if MARKERS[task.family] in line).strip()
        assert bug_line not in task.issue, task.id


def test_one_task_per_family_validates(gym):
    sample = [next(t.id for t in gym.tasks if t.family == f) for f in MARKERS]
    results = validate_suite(gym, backend="local", jobs=2, repeats=1, task_ids=sample)
    assert [r.task_id for r in results if not r.ok] == [], [r.reasons for r in results if not r.ok]
    assert len(results) == len(sample)


def test_build_reproduces_the_shipped_suite(tmp_path):
    """The committed tasks, patches, checks and generated practice modules are build.py's output."""
    import filecmp
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "gym"
    shutil.copytree(GYM_SUITE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, str(copy / "build.py")], check=True, capture_output=True)
    for sub in ("tasks", "patches", "hidden", "repo/gym", "repo/tests"):
        cmp = filecmp.dircmp(GYM_SUITE / sub, copy / sub, ignore=["__pycache__"])
        assert not (cmp.left_only or cmp.right_only or cmp.diff_files), (sub, cmp.left_only, cmp.right_only,
                                                                          cmp.diff_files)


def test_generated_functions_are_deterministic_distinct_and_clean():
    import random
    import sys

    sys.path.insert(0, str(GYM_SUITE))
    try:
        from drills import drill_functions
    finally:
        sys.path.remove(str(GYM_SUITE))
    first = [d.source for _, d in zip(range(50), drill_functions(random.Random(3), set()))]
    again = [d.source for _, d in zip(range(50), drill_functions(random.Random(3), set()))]
    assert first == again and len(set(first)) == 50
    for source in first:
        assert all(marker not in source for marker in MARKERS.values()), source
