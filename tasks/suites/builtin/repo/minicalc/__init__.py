"""minicalc: small pure functions over numbers, strings, intervals and sequences.

A repository written for fixrl's built-in task suite: every function is short, deterministic
and covered by the tests under tests/.
"""
