"""The generator's code that runs inside a sandbox: its pytest plugins (`outcomes` with
`failure_capture`, `cover`), shipped as files beside the repository copy, and the prelude of
its forked runs (`session`), imported from the sandbox's copy of the inside package."""
