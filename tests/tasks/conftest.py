"""Tests of fixrl.tasks, mirroring its rooms: format/, check/, generate/. This file puts the
shared suite helpers (suitekit) on the import path of the subfolders' tests."""
