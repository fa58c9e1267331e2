"""The demo's recipe (`fixrl demo`): SFT stages, the probe, GRPO and held-out evaluations of a
tiny agent on the gym suite. Everything here is the demo's own; nothing but the command line
imports it. The core offers the generic hooks it uses (per-token loss weights, a pluggable
output head for SFT)."""
