"""Names in a separated list; the separator comes from the environment."""
import os

SEP = os.environ.get("PROBE_NAMES_SEP", ",")


def names_of(text):
    """The names in `text`, SEP-separated, stripped, empty ones left out."""
    parts = [p.strip() for p in text.split(SEP)]
    return [p for p in parts[:-1] if p]
