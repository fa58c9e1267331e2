"""fixrl init-tiny DIR: a tiny Qwen2-architecture checkpoint with Qwen2.5's tokenizer and chat
template (random weights), loadable with AutoModelForCausalLM / AutoTokenizer."""
from __future__ import annotations

from fixrl.harness.cli.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("init-tiny", help="write a tiny Qwen2-architecture checkpoint (random weights, "
                                         "Qwen2.5 tokenizer and chat template)")
    p.add_argument("dir", help="directory to create (must not exist, or be empty)")
    p.add_argument("--hidden-size", type=int, default=64, help="hidden size (default 64)")
    p.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--kv-heads", type=int, default=2, help="key/value heads (default 2)")
    p.add_argument("--intermediate-size", type=int, default=128, help="MLP size (default 128)")
    p.add_argument("--head-dim", type=int, default=None,
                   help="attention head size; sets --heads to hidden size / head size (vLLM's CPU attention "
                        "needs >= 32: use --head-dim 32 for --engine vllm)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    p.set_defaults(func=run)


def run(args) -> int:
    from fixrl.harness.model.tiny import init_tiny  # noqa: PLC0415 - torch and transformers, only to write one

    try:
        path = init_tiny(args.dir, hidden_size=args.hidden_size, num_layers=args.layers, num_heads=args.heads,
                         num_kv_heads=args.kv_heads, intermediate_size=args.intermediate_size, seed=args.seed,
                         head_dim=args.head_dim)
    except FileExistsError as e:
        raise UserError(f"init-tiny {args.dir}: {e}") from None
    except ValueError as e:
        raise UserError(f"init-tiny: {e} (see --hidden-size/--heads/--kv-heads/--head-dim)") from None
    print(f"wrote a tiny Qwen2 checkpoint to {path} (hidden {args.hidden_size}, {args.layers} layers); "
          f"use it with --model {path}")
    return 0
