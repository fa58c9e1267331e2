"""Tasks: the format users author, loading, materialising, the hidden check, validation,
scaffolding and SWE-bench interop (the mutation generator lives in tasks.generate).

    from fixrl.tasks import load_suite, materialize, run_check
    suite = load_suite(Path("my-suite"))
    materialize(suite.tasks[0], Path("/tmp/repo"), "buggy")
"""
from fixrl.tasks.check.run import CheckResult, run_check
from fixrl.tasks.check.validate import ValidationResult, validate_suite, validate_task
from fixrl.tasks.format.loader import TaskError, load_suite, load_task
from fixrl.tasks.format.materialize import is_test_path, materialize, run_setup
from fixrl.tasks.format.schema import Check, EditRules, GitRepo, Limits, Suite, Task

__all__ = ["Task", "Suite", "Check", "GitRepo", "Limits", "EditRules", "TaskError", "load_suite", "load_task",
           "materialize", "run_setup", "is_test_path", "run_check", "CheckResult", "validate_suite",
           "validate_task", "ValidationResult"]
