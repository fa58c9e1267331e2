"""The generator's journal: every test-run outcome, appended as it arrives, so a killed run
picks up where it stopped.

    OUT/generate.journal.jsonl
    {"kind": "header", "key": "<sha256>", "inputs": {...}}     # what the outcomes depend on
    {"kind": "record", "id": "baseline", ...}                  # the clean suite's outcomes
    {"kind": "record", "id": "coverage", ...}                  # which tests run which code
    {"kind": "record", "id": "<candidate key>/1", ...}         # a candidate's selected run
    {"kind": "record", "id": "<candidate key>/2", ...}         # its whole-suite run

An outcome depends on the repository's content, the test command and the backend (the key),
never on the seed, --max or the targeting flags: those only choose which candidates are tried,
and in which order, so a rerun with other settings reuses what it can. A journal with another
key is started afresh. A line cut short by a kill is dropped when the journal is reopened.

What this does not guarantee: that an outcome is the same when run again (a flaky test can
make a candidate kept in one run and equivalent in the next); the journal makes a resumed run
reuse the first answer, so it ends as the interrupted run would have.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

JOURNAL_NAME = "generate.journal.jsonl"
VERSION = 1
"""Bumped when what a record means changes: older journals are then started afresh."""


def tree_hash(root: Path, skip: set[str]) -> str:
    """sha256 over every file's relative path and content under `root` (directories named in
    `skip` left out; a symbolic link counts by its target's text)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            if name.endswith(".pyc"):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            h.update(rel.encode() + b"\0")
            if os.path.islink(full):
                h.update(b"link:" + os.readlink(full).encode())
            else:
                with open(full, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def journal_key(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps({"version": VERSION, **inputs}, sort_keys=True).encode()).hexdigest()


class Journal:
    """Append-only JSONL of outcomes under one key (see the module docstring)."""

    def __init__(self, path: Path, inputs: dict[str, Any]) -> None:
        self.path = path
        self.key = journal_key(inputs)
        self.records: dict[str, dict] = {}
        self.reused = 0
        """Records read back from an earlier run."""
        self.restarted: str | None = None
        """Why an existing journal was not reused (None: there was none, or it was)."""
        lines = self._read()
        header = lines[0] if lines else None
        if header is not None and header.get("kind") == "header" and header.get("key") == self.key:
            for rec in lines[1:]:
                if rec.get("kind") == "record" and isinstance(rec.get("id"), str):
                    self.records[rec["id"]] = rec
            self.reused = len(self.records)
            self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the run, closed in close()
        else:
            if header is not None:
                self.restarted = "its inputs differ (the repository, the test command or the backend changed)"
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - as above
            self._write({"kind": "header", "key": self.key, "version": VERSION, "inputs": inputs})

    def _read(self) -> list[dict]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        end = raw.rfind(b"\n")
        if end + 1 != len(raw):  # a line cut short by a kill: dropped, so the next append starts clean
            with open(self.path, "r+b") as f:
                f.truncate(end + 1)
            raw = raw[: end + 1]
        out = []
        for line in raw.decode("utf-8", "replace").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def _write(self, rec: dict) -> None:
        self._f.write(json.dumps(rec, sort_keys=True) + "\n")
        self._f.flush()  # in the kernel's hands: a killed process loses nothing written

    def get(self, rid: str) -> dict | None:
        return self.records.get(rid)

    def put(self, rid: str, data: dict) -> None:
        rec = {**data, "kind": "record", "id": rid}
        self.records[rid] = rec
        self._write(rec)

    def close(self) -> None:
        self._f.close()
