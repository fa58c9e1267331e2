"""The suite the generator writes: its suite.yaml, and the staging folder (OUT/.generate-stage) the
new tasks are written and validated in before they replace the generated part of the suite.

What this does not guarantee: an atomic switch of the whole suite; at every moment the suite's
generated tasks are the old ones, none, or the new ones, each with its check files in place."""
from __future__ import annotations

import os
import shlex
import shutil
from collections import Counter
from pathlib import Path

import yaml

from fixrl.tasks.generate.config import GenerateConfig
from fixrl.tasks.generate.scan import copy_repo

STAGE_DIR = ".generate-stage"
TRASH_DIR = ".generate-trash"


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_presenter)


def dump_yaml(data) -> str:
    """YAML as the generator writes it: keys in order, multi-line strings as blocks."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)


def public_command(test_cmd: str, excluded: list[str]) -> str:
    """The `test` tool's command: the repository's tests without those excluded at the baseline
    (they fail on the unmodified repository: a correct fix would still show them failing)."""
    return " ".join([test_cmd, *(f"--deselect {shlex.quote(n)}" for n in sorted(excluded))])


def tool_timeout(seconds: float, factor: float) -> float:
    """The `test` tool's time limit for a suite whose run took `seconds`: 5 s + `factor` times
    it, 60 to 600 s."""
    return max(60.0, min(600.0, float(round(5 + factor * seconds))))


def suite_config(out: Path, repo: Path, names: Counter, test_cmd: str, cfg: GenerateConfig,
                 suite_seconds: float = 0.0, environment: dict | None = None,
                 excluded: list[str] | tuple[str, ...] = ()) -> dict:
    """The suite.yaml `out` gets: the existing one (or a new one) with the generator's defaults
    filled in where unset (`environment` too), its `rename_pool` replaced, and `public_tests`
    replaced when unset or the generator's own (`test_cmd`, deselecting `excluded`)."""
    suite_file = out / "suite.yaml"
    config = yaml.safe_load(suite_file.read_text(encoding="utf-8")) if suite_file.exists() else None
    config = config if isinstance(config, dict) else {}
    config.setdefault("name", out.name)
    config.setdefault("description", f"Bug-fix tasks generated from {repo.name} by `fixrl tasks generate`.")
    if environment is not None:
        config.setdefault("environment", environment)
    defaults = config.setdefault("defaults", {})
    defaults.setdefault("repo", "repo")
    shown = defaults.get("public_tests")
    if shown is None or shown == test_cmd or str(shown).startswith(test_cmd + " --deselect "):
        defaults["public_tests"] = public_command(test_cmd, list(excluded))
    limits = defaults.setdefault("limits", {})
    limits.setdefault("max_turns", cfg.max_turns)
    limits.setdefault("max_edits", cfg.max_edits)
    # The agent's `test` tool runs the whole suite through the check's runner (its guard on; the
    # validation runs it the same way), which costs up to 3x the baseline's unguarded, forked
    # run (attrs 1.7x, pyparsing 6.7x, `fixrl bench check --public`: every comparison a test
    # makes is decided by the guard): give it the check's own factor, 10, over 3x; guard parity
    # raises it to 10x the guarded run it times (`parity.py`). At 10x the baseline,
    # more-itertools' test_more.py passed only on an idle machine, and werkzeug's public run
    # (60 s) timed out on 6 of 8 tasks with five sandboxes on two cores.
    limits.setdefault("tool_timeout", tool_timeout(suite_seconds, 30))
    config["rename_pool"] = sorted(n for n, k in names.items() if k == 1 and not n.startswith("_"))
    return config


def prepare_stage(out: Path, repo: Path, names: Counter, test_cmd: str, cfg: GenerateConfig, suite_seconds: float,
                  environment: dict | None = None, excluded: list[str] | tuple[str, ...] = ()) -> tuple[Path, dict]:
    """OUT/.generate-stage: a suite of its own (suite.yaml, repo/, the generated folders) that the
    new tasks are written and validated in; returns it and the suite.yaml `out` will get."""
    stage = out / STAGE_DIR
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir()
    config = suite_config(out, repo, names, test_cmd, cfg, suite_seconds, environment, excluded)
    staged = {**config, "defaults": {**config["defaults"], "repo": "repo"}}
    (stage / "suite.yaml").write_text(dump_yaml(staged), encoding="utf-8")
    if (out / "repo").resolve() == repo:
        (stage / "repo").symlink_to(repo, target_is_directory=True)
    else:
        copy_repo(repo, stage / "repo")
    for d in (stage / "tasks" / "generated", stage / "checks" / "generated"):
        d.mkdir(parents=True)
    return stage, config


def publish(stage: Path, out: Path, config: dict) -> None:
    """Move the staged repository, checks and tasks into `out` and write its suite.yaml. At
    every moment the suite's generated tasks are the old ones, none, or the new ones, each with
    its check files in place."""
    trash = out / TRASH_DIR
    if trash.exists():
        shutil.rmtree(trash)
    trash.mkdir()
    for rel in ("tasks/generated", "checks/generated"):
        if (out / rel).exists():
            (out / rel).rename(trash / rel.replace("/", "-"))
    if not (stage / "repo").is_symlink():
        if (out / "repo").exists() or (out / "repo").is_symlink():
            (out / "repo").rename(trash / "repo")
        (stage / "repo").rename(out / "repo")
    for rel in ("checks/generated", "tasks/generated"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).rename(out / rel)
    write_atomic(out / "suite.yaml", dump_yaml(config))
    shutil.rmtree(trash, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path` through a rename: a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def remove_task(out: Path, tid: str) -> None:
    """A staged task's file and check folder, gone."""
    (out / "tasks" / "generated" / f"{tid}.yaml").unlink(missing_ok=True)
    shutil.rmtree(out / "checks" / "generated" / tid, ignore_errors=True)
