"""Rlimits, then the command: `python -S RLIMITS_PY AS CPU FSIZE NPROC UID ARGV...`.

The local sandbox's fallback where the host lacks `prlimit` (or, as root, `setpriv`): sets the
address-space (-1: none), CPU-seconds, file-size and process limits, drops to UID with no
supplementary groups (-1: stays), sets no_new_privs, and execs ARGV. Standard library only; it
runs where the command runs (inside bubblewrap when the sandbox uses it).
"""
import ctypes
import os
import resource
import sys


def main(argv):
    memory, cpu, fsize, nproc, uid = (int(a) for a in argv[1:6])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if uid >= 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    os.execvp(argv[6], argv[6:])


if __name__ == "__main__":
    main(sys.argv)
