"""Where a call came from (like boltons' make_sentinel, which names the module that called it)."""
import sys


def caller_frame(depth=1):
    """The frame `depth` calls above the function that calls this one."""
    return sys._getframe(depth + 1)
