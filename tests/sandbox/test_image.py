"""The Docker base image (sandbox.image): what it has (CPython's test package, fixrl's own
pytest), its recipe label, the rebuild when the recipe changes, and environment layers that
follow a rebuilt base image and carry their bytecode."""
from __future__ import annotations

import shutil
import uuid
from importlib import metadata
from pathlib import Path

import pytest

from fixrl.sandbox import DEFAULT_IMAGE, SandboxError, open_sandbox
from fixrl.sandbox.image import (
    BASE_LABEL,
    PACKAGES,
    RECIPE_LABEL,
    build_image,
    image_id,
    image_label,
    pytest_pins,
    recipe,
    require_base_image,
    stale_reason,
)


def test_recipe_names_what_goes_in_and_changes_with_it():
    """The pins are fixrl's own pytest and its runtime dependencies; any change of a package or
    a pin is a new recipe."""
    pins = pytest_pins()
    assert f"pytest=={metadata.version('pytest')}" in pins
    assert f"pluggy=={metadata.version('pluggy')}" in pins
    assert any(p.startswith("libpython3") and p.endswith("-testsuite") for p in PACKAGES)
    assert "python3-pytest" not in PACKAGES  # Debian's pytest is another version than fixrl's
    assert recipe(PACKAGES, pins) == recipe(PACKAGES, pins)
    assert recipe(PACKAGES + ("git",), pins) != recipe(PACKAGES, pins)
    assert recipe(PACKAGES, pins[:-1] + ("pytest==1.0",)) != recipe(PACKAGES, pins)


@pytest.fixture
def scratch_tags(docker_available):
    """Image tags a test makes (copies of the base image under test tags), removed after it."""
    from fixrl.sandbox.docker import client  # noqa: PLC0415 - the docker SDK only with Docker

    tags: list[str] = []
    yield tags
    for tag in reversed(tags):
        try:
            client().images.remove(tag, force=True)
        except Exception:  # noqa: BLE001 - best effort cleanup; a leftover tag is harmless
            pass


def _copy_base(tag: str, *changes: str) -> str:
    """Commit a container of the base image as `tag`, with Dockerfile `changes` (labels)."""
    from fixrl.sandbox.docker import client  # noqa: PLC0415 - the docker SDK only with Docker

    c = client()
    box = c.containers.create(DEFAULT_IMAGE, ["true"], network_disabled=True)
    try:
        repo, _, version = tag.rpartition(":")
        box.commit(repository=repo, tag=version, changes=list(changes))
    finally:
        box.remove(force=True)
    return tag


@pytest.mark.docker
def test_base_image_has_cpythons_test_package_and_fixrls_pytest(docker_available, tmp_path):
    """Tests that import `test.support` (import_helper, os_helper) or CPython's own test modules
    (configargparse runs `test.test_argparse`, else skips those tests with only a logged error:
    other test ids on Docker than locally) run on Docker as on the local backend, under the
    same pytest version."""
    (tmp_path / "test_uses_support.py").write_text(
        "import test.test_argparse\nfrom test.support import import_helper, os_helper\n\n"
        "def test_it():\n    assert os_helper.TESTFN and import_helper.import_module('json')\n")
    with open_sandbox(tmp_path, backend="docker") as sb:
        version = sb.exec("python -m pytest --version && pytest --version", timeout=60)
        run = sb.exec("python -m pytest -q -p no:cacheprovider test_uses_support.py", timeout=120)
    assert version.output.count(f"pytest {metadata.version('pytest')}") == 2, version.output
    assert run.exit_code == 0 and "1 passed" in run.output, run.output
    assert image_label(DEFAULT_IMAGE, RECIPE_LABEL) == recipe()


@pytest.mark.docker
def test_an_image_of_another_recipe_is_rebuilt_never_kept(scratch_tags, monkeypatch):
    """`build_image` keeps an image of the current recipe and rebuilds one of another (here it
    gets as far as looking for debootstrap, taken off PATH so the test does not build for a
    minute); sandboxes refuse a stale base image with the command that rebuilds it."""
    current = _copy_base(f"fixrl-test-image:{uuid.uuid4().hex[:8]}")
    stale = _copy_base(f"fixrl-test-image:{uuid.uuid4().hex[:8]}", f"LABEL {RECIPE_LABEL}=0000")
    scratch_tags += [current, stale]
    monkeypatch.setenv("PATH", "/nonexistent")
    assert shutil.which("debootstrap") is None
    assert build_image(current) is False
    assert "another recipe" in (stale_reason(stale) or "")
    with pytest.raises(SandboxError, match="debootstrap not found"):
        build_image(stale)
    with pytest.raises(SandboxError, match=f"build-image --tag {stale}"):
        require_base_image(stale)
    require_base_image(current)


@pytest.mark.docker
def test_environment_layer_follows_a_rebuilt_base_image_and_has_its_bytecode(scratch_tags, tmp_path, monkeypatch):
    """A layer records its base image's id; a new base image (same tag, new id) rebuilds it.
    Its packages' bytecode is compiled in, at the paths sandboxes import them from."""
    from fixrl.sandbox.environment import EnvSpec, build_docker, docker_env_current  # noqa: PLC0415 - Docker only

    base = _copy_base(f"fixrl-test-image:{uuid.uuid4().hex[:8]}")
    spec = EnvSpec(packages=("iniconfig",), base_image=base)
    scratch_tags += [base, spec.tag()]
    monkeypatch.setenv("FIXRL_ENV_DIR", str(tmp_path / "envs"))
    assert build_docker(spec) == spec.tag()
    assert docker_env_current(spec) and image_label(spec.tag(), BASE_LABEL) == image_id(base)
    first = image_id(spec.tag())
    assert build_docker(spec) == spec.tag() and image_id(spec.tag()) == first  # cached

    _copy_base(base, "LABEL fixrl.test=rebuilt")  # the base image rebuilt: same tag, new id
    assert not docker_env_current(spec)
    build_docker(spec)
    assert docker_env_current(spec) and image_id(spec.tag()) != first
    assert image_id(first) is None  # the replaced layer does not stay behind on the disk

    with open_sandbox(Path(tmp_path), backend="docker", image=spec.tag()) as sb:
        r = sb.exec("python -c \"import iniconfig, sys; print(iniconfig.__cached__)\" && "
                    "ls /usr/local/lib/python3*/dist-packages/iniconfig/__pycache__/", timeout=60)
    assert r.exit_code == 0 and "__init__.cpython-3" in r.output, r.output
