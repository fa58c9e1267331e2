"""Keep the items of a batch; how many a batch may hold comes from the environment."""
import os

LIMIT = int(os.environ.get("PROBE_KEEP_LIMIT", "1000"))


def kept(items):
    """The items of `items`, in order, at most LIMIT of them."""
    items = list(items)
    return items[:min(len(items), LIMIT) - 1]
