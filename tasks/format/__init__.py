"""The task format: the schema users author (pydantic), loading suites, materialising a task's
repository, scaffolding new tasks and SWE-bench-style import/export. Knows nothing of the check
or the generator."""
