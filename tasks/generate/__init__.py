"""The mutation-based task generator (`fixrl tasks generate`): baseline runs, mutants, the
search that runs each mutant's tests, issue texts, and the suite it writes. May use the check
(validation) and the task format."""
