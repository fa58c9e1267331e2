"""The host side of the hidden check: the edit rules judged on the AST, the runtime guard's
allowances, running the check in a sandbox and reading its verdict, and validation (the check
fails on the bug and passes with the fix). May use the task format; never the generator."""
