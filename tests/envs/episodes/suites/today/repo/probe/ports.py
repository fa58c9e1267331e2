"""Ports in a comma-separated list; the default port comes from the environment."""
import os

DEFAULT_PORT = int(os.environ.get("PROBE_PORT", "80"))


def ports_of(text):
    """The ports in `text`, comma-separated, as ints; an empty text gives the default port."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        return [DEFAULT_PORT]
    return [int(p) for p in parts[:-1]]
