"""How `make test` splits the suite between pytest-xdist workers (`-n 2 --dist loadgroup
--no-loadscope-reorder`, registered by tests/conftest.py): every test gets a group, and whole
groups are handed out, in the order of the collected items.

- A test file is one group, so its module-scoped fixtures (sandbox pools, generated suites) are
  made once, as in a serial run.
- The files using one of SHARED_FIXTURES (session fixtures that take a minute or more) form that
  fixture's group: made once in the run, not once a worker.
- A test marked `xdist_group` itself keeps its group (a shard of a long test, on its own).
- The groups holding a `slow` test come first, so the long end-to-end runs start at once instead
  of leaving one worker alone with them at the end.

xdist 3.8's own `loadgroup` does not group under pytest 9.2: it renames `item._nodeid`, which
pytest 9.2 no longer reads, so every test went alone. Here the workers write each test's group to a
file the controller names (`pytest_configure_node`), and `GroupScheduling` reads it there.

Not guaranteed: balance. A group's length is not known before it runs; the first groups go one
to each worker and then each worker takes the next group when it is done."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

SHARED_FIXTURES = {"vllm_server": "vllm", "ray_cluster": "ray", "grpo_run": "view", "eval_run": "view",
                   "browser": "view"}
"""Session fixture -> the group of every file whose tests use it (the first in this order wins)."""


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::")[0]


def own_group(item: pytest.Item) -> str | None:
    """The group a test's own `xdist_group` mark names (xdist's rules: first argument or `name`)."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def groups(items: list[pytest.Item]) -> list[str]:
    """Each item's group: its own mark's, else its file's shared fixture's, else its file."""
    used: dict[str, set[str]] = {}
    for item in items:
        used.setdefault(file_of(item), set()).update(getattr(item, "fixturenames", ()))
    by_file = {f: next((g for fx, g in SHARED_FIXTURES.items() if fx in names), f) for f, names in used.items()}
    return [own_group(item) or by_file[file_of(item)] for item in items]


def slow_groups_first(items: list[pytest.Item], group: list[str]) -> list[pytest.Item]:
    """`items` (of groups `group`) with every group that holds a `slow` test first; otherwise in
    the order each group first appears, and each group's tests in their order."""
    first: dict[str, int] = {}
    for n, g in enumerate(group):
        first.setdefault(g, n)
    slow = {g for g, item in zip(group, items) if item.get_closest_marker("slow")}
    order = sorted(range(len(items)), key=lambda n: (group[n] not in slow, first[group[n]], n))
    return [items[n] for n in order]


GROUPS_DIR = "fixrl_groups_dir"
"""The `workerinput` key of the folder the workers write their `{nodeid: group}` into."""


class MarkGroups:
    """Gives every test its group after collection (tryfirst: before pytest's own reordering);
    on an xdist worker, writes them for the controller's scheduler."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.group_of: dict[int, str] = {}
        """id(item) -> its group."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item, g in zip(items, groups(items)):
            self.group_of[id(item)] = g
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None and GROUPS_DIR in workerinput:
            out = Path(workerinput[GROUPS_DIR]) / f"{workerinput['workerid']}.json"
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps({i.nodeid: self.group_of[id(i)] for i in items}))
            os.replace(tmp, out)


class SlowGroupsFirst:
    """Reorders the items after pytest's own fixture-driven reordering (trylast)."""

    def __init__(self, marks: MarkGroups) -> None:
        self.marks = marks

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items[:] = slow_groups_first(items, [self.marks.group_of[id(i)] for i in items])


def read_groups(folder: Path) -> dict[str, str]:
    """The `{nodeid: group}` a worker wrote (all workers collect the same tests: xdist checks)."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise RuntimeError(f"no worker wrote its test groups into {folder} (tests/xdistkit.py)")
    return json.loads(files[0].read_text())


def _scheduler_class():
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with this module's groups as the scopes."""

        def __init__(self, config: pytest.Config, log=None, folder: Path | None = None) -> None:
            super().__init__(config, log)
            self.folder = folder
            self.group_of: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.group_of is None:
                self.group_of = read_groups(self.folder)
            return self.group_of[nodeid]

    return GroupScheduling


class Controller:
    """On the xdist controller of `--dist loadgroup`: the folder the workers write into, handed
    to each worker, and the scheduler that reads it."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="fixrl-xdist-groups-"))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        node.workerinput[GROUPS_DIR] = str(self.folder)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        return _scheduler_class()(config, log, self.folder)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def register(config: pytest.Config) -> None:
    marks = MarkGroups(config)
    config.pluginmanager.register(marks, "fixrl-xdist-groups")
    config.pluginmanager.register(SlowGroupsFirst(marks), "fixrl-slow-groups-first")
    on_controller = not hasattr(config, "workerinput")
    if on_controller and config.getoption("dist", "no") == "loadgroup":
        config.pluginmanager.register(Controller(), "fixrl-xdist-controller")
