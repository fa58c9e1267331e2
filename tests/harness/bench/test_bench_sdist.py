"""`fetch_sdist`, the one download-and-unpack of released source distributions that `fixrl
bench repos` and the tests' `sdist` fixture share: the real pip download into a fresh cache, the
cache answering without pip afterwards, and its two errors kept apart (no release to download
is `SdistUnavailable`, which the fixture may skip on; a badly unpacked one is not)."""
from __future__ import annotations

import os

import pytest

from fixrl.harness.bench.errors import BenchError
from fixrl.harness.bench.sdist import SdistUnavailable, fetch_sdist


def test_a_release_is_downloaded_unpacked_and_then_read_from_the_cache(tmp_path, monkeypatch):
    try:
        top = fetch_sdist("inflection", "0.5.1", tmp_path)
    except SdistUnavailable as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(e))
    assert top == tmp_path / "inflection-0.5.1" / "src" / "inflection-0.5.1"
    assert (top / "inflection" / "__init__.py").is_file() and (top / "test_inflection.py").is_file()
    assert (tmp_path / "inflection-0.5.1" / ".unpacked").read_text().endswith(".tar.gz")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # a second download would fail: the cache answers
    assert fetch_sdist("inflection", "0.5.1", tmp_path) == top


def test_no_release_to_download_is_unavailable_and_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(SdistUnavailable, match="cannot download the inflection 0.5.1 source distribution"):
        fetch_sdist("inflection", "0.5.1", tmp_path)
    assert not (tmp_path / "inflection-0.5.1" / ".unpacked").exists()  # tried again next time


def test_an_archive_unpacked_into_two_folders_is_an_error_not_unavailable(tmp_path):
    root = tmp_path / "demo-1"
    (root / "src" / "a").mkdir(parents=True)
    (root / "src" / "b").mkdir()
    (root / ".unpacked").write_text("demo-1.tar.gz")
    with pytest.raises(BenchError, match=r"demo 1: the sdist unpacked into 2 folders, not one") as e:
        fetch_sdist("demo", "1", tmp_path)
    assert not isinstance(e.value, SdistUnavailable)
