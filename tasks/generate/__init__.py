"""The mutation-based task generator (`fixrl tasks generate`). May use the check (validation)
and the task format.

The job is `pipeline.generate`, read top to bottom; its stages, each returning a typed record:
`baseline` (Baseline), `scan` (Scan: the candidates), `search` (Selection, SearchResult),
`write` (Written: tasks in the staging folder of `staging`), `validation` (Validation), and
`report` (the yield report, made from those records). Beside them: `config`, `commands` (the
pytest command and the check's), `candidate`, `order` (seeded order, choice, split), `journal`,
`progress`, `mutate` (with `mutate_sites`, `mutate_moves`), `issue/` (issue texts)."""
