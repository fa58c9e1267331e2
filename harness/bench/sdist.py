"""Released source distributions from PyPI, downloaded once into a cache and unpacked: the real
repositories (nobody here wrote them) that `fixrl bench repos` generates suites from and that the
tests' `sdist` fixture hands out. Both share one cache layout, so a release is fetched once:

    CACHE/NAME-VERSION/download/ARCHIVE     what `pip download --no-binary :all: --no-deps` left
    CACHE/NAME-VERSION/src/TOP/             the archive unpacked (tar with the `data` filter, or zip)
    CACHE/NAME-VERSION/.unpacked            written last: the archive's name

What this does not guarantee: that PyPI answers (`SdistUnavailable`), that the release has tests
in its archive, or that two processes fetching the same release at once do not race (the marker
is written last, so a finished folder is only ever read).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from filelock import FileLock

from fixrl.harness.bench.errors import BenchError


class SdistUnavailable(BenchError):
    """The release's source distribution could not be downloaded (no PyPI, no such release, no
    sdist for it): a missing input, where a wrongly shaped archive is a plain `BenchError`."""


def fetch_sdist(name: str, version: str, cache: Path) -> Path:
    """The top folder of `name==version`'s unpacked sdist, downloaded with pip into `cache` the
    first time. Raises `SdistUnavailable` when pip cannot fetch it, `BenchError` when the archive
    does not unpack into exactly one folder."""
    root = cache / f"{name}-{version}"
    done = root / ".unpacked"
    cache.mkdir(parents=True, exist_ok=True)
    # One download and unpacking at a time per sdist: parallel test workers (or two `fixrl bench`
    # runs) share the cache, and `.unpacked` is only looked at under the lock.
    with FileLock(str(cache / f".{name}-{version}.lock"), timeout=600):
        if not done.exists():
            dl = root / "download"
            dl.mkdir(parents=True, exist_ok=True)
            r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                                "-d", str(dl), f"{name}=={version}"], capture_output=True, text=True)
            archives = sorted(p for p in dl.iterdir() if p.is_file())
            if r.returncode != 0 or not archives:
                raise SdistUnavailable(f"cannot download the {name} {version} source distribution: "
                                       f"{r.stderr.strip()[-300:]}")
            src = root / "src"
            shutil.rmtree(src, ignore_errors=True)
            if archives[0].suffix == ".zip":
                with zipfile.ZipFile(archives[0]) as z:
                    z.extractall(src)
            else:
                with tarfile.open(archives[0]) as t:
                    t.extractall(src, filter="data")
            done.write_text(archives[0].name)
    tops = [p for p in (root / "src").iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise BenchError(f"{name} {version}: the sdist unpacked into {len(tops)} folders, not one "
                         f"(under {root / 'src'}; delete {root} to fetch it again)")
    return tops[0]
