"""tinyfw's Llama runs the GGUF files of the Llama family, not only SmolLM2's: small random
Llama and Qwen2 models made by transformers (a test-only oracle), written into GGUF files the way
llama.cpp's converter writes them (its tensor names; a "llama" file's q and k rows permuted so
that rotary embeddings pair neighbouring channels; a "qwen2" file's q, k and v biases), give
transformers' logits; a file of an architecture tinyfw does not know is refused with its name."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tinyfw.models.gguf import GGUFFile
from tinyfw.models.llama import Llama, neighbours_order

gguf = pytest.importorskip("gguf")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SIZES = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
             rms_norm_eps=1e-5)


def hf_model(arch: str, tied: bool, vocab_size: int = 96) -> Any:
    """A random transformers model of arch ("llama" or "qwen2"), float32, in eval mode."""
    torch.manual_seed(0)
    sizes = {**SIZES, "vocab_size": vocab_size}
    if arch == "llama":
        config = transformers.LlamaConfig(**sizes, rope_theta=10000.0, tie_word_embeddings=tied)
        model = transformers.LlamaForCausalLM(config)
    else:
        config = transformers.Qwen2Config(**sizes, rope_theta=1000000.0,
                                          tie_word_embeddings=tied)
        model = transformers.Qwen2ForCausalLM(config)
    return model.float().eval()


def write_gguf(model: Any, arch: str, path: Path, tied: bool, tokens: list[str] | None = None,
               template: str | None = None) -> None:
    """model's weights in a GGUF file, named and laid out as llama.cpp's converter does (with a
    vocabulary of tokens, no merges, the last token the end of text, and a chat template)."""
    c = model.config
    head_dim = c.hidden_size // c.num_attention_heads
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_context_length(c.max_position_embeddings)
    writer.add_embedding_length(c.hidden_size)
    writer.add_block_count(c.num_hidden_layers)
    writer.add_feed_forward_length(c.intermediate_size)
    writer.add_head_count(c.num_attention_heads)
    writer.add_head_count_kv(c.num_key_value_heads)
    writer.add_layer_norm_rms_eps(c.rms_norm_eps)
    writer.add_rope_freq_base(float(model.config.rope_parameters["rope_theta"]))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens or [f"t{i}" for i in range(c.vocab_size)])
    if tokens:
        writer.add_token_merges([])
        writer.add_eos_token_id(len(tokens) - 1)
        writer.add_tokenizer_pre("qwen2")
    if template:
        writer.add_chat_template(template)
    weights = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    order = {"q": neighbours_order(c.num_attention_heads, head_dim),
             "k": neighbours_order(c.num_key_value_heads, head_dim)}
    names = {"embed_tokens": "token_embd", "norm": "output_norm"}
    for key, value in weights.items():
        parts = key.split(".")
        if key == "lm_head.weight":
            if not tied:
                writer.add_tensor("output.weight", value)
            continue
        if parts[1] in names:
            writer.add_tensor(f"{names[parts[1]]}.weight", value)
            continue
        block, module = f"blk.{parts[2]}", ".".join(parts[3:5])
        gguf_name = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
                     "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
                     "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                     "mlp.down_proj": "ffn_down", "input_layernorm.weight": "attn_norm",
                     "post_attention_layernorm.weight": "ffn_norm"}[module]
        kind = parts[-1]
        if arch == "llama" and gguf_name in ("attn_q", "attn_k"):
            value = value[order[gguf_name[-1]]]  # the converter's permutation
        writer.add_tensor(f"{block}.{gguf_name}.{kind}", value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize("arch,tied", [("llama", True), ("llama", False), ("qwen2", True)])
def test_logits_are_transformers(arch: str, tied: bool, tmp_path: Path) -> None:
    model = hf_model(arch, tied)
    path = tmp_path / f"{arch}.gguf"
    write_gguf(model, arch, path, tied)
    ids = [3, 17, 42, 5, 88, 1, 60]
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    ours = Llama(GGUFFile(path), max_context=32).logits(ids)
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=1e-4)


def test_an_unknown_architecture_is_refused_with_its_name(tmp_path: Path) -> None:
    path = tmp_path / "gemma.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(NotImplementedError, match="'gemma'"):
        Llama(GGUFFile(path))


def test_the_command_line_runs_a_gguf_file(tmp_path: Path, capsys: Any) -> None:
    """`python -m tinyfw.llm --model FILE`: a Qwen2 file whose vocabulary is the 256 bytes and
    an end token, with a Jinja chat template, answers with transformers' greedy tokens."""
    from tinyfw.llm import main
    from tinyfw.tokenizers.bpe import BPETokenizer, byte_alphabet
    model = hf_model("qwen2", True, vocab_size=257)
    path = tmp_path / "bytes.gguf"
    template = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                "{% if add_generation_prompt %}assistant:{% endif %}")
    write_gguf(model, "qwen2", path, True, tokens=[*byte_alphabet().values(), "<|end|>"],
               template=template)
    main(["--model", str(path), "--max-tokens", "6", "--context", "48", "hi"])
    printed = capsys.readouterr().out
    tokenizer = BPETokenizer.from_gguf(GGUFFile(path).metadata)
    ids = tokenizer.encode("user: hi\nassistant:")
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False,
                             eos_token_id=256, pad_token_id=256)[0, len(ids):].tolist()
    want = tokenizer.decode([t for t in out if t != 256])
    assert printed.startswith(want), (printed, want)
