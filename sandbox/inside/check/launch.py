"""The one-shot launcher of the hidden check: `python [FLAGS] LAUNCH_PY CONFIG_JSON`.

`tasks.check.run` writes this package's files into the check's private directory (under a
directory named `.fixrl-launch-*`) and runs this file with the check command's interpreter
and flags. It puts its copy of the package on sys.path itself (interpreter flags such as -I
or -P leave the script's directory out), imports the supervisor under the package's own name
(whatever the directory is called), and runs it; the supervisor removes these directories
from sys.path and deletes the files before any repository code runs.

Run as a script, so it imports nothing of its package relatively; standard library only.
"""
import importlib
import os
import sys

if __name__ == "__main__":
    _package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.dirname(_package_dir))
    _supervisor = importlib.import_module(os.path.basename(_package_dir) + ".check.supervisor")
    os._exit(_supervisor.launch(sys.argv[1]))
