"""Versions in a comma-separated list (packaging's parser checks each one)."""
from packaging.version import Version


def versions_of(text):
    """The versions in `text`, comma-separated, stripped, each a valid version."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return [str(Version(p)) for p in parts[:-1]]
