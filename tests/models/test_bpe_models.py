"""Other models' tokenizers from their GGUF metadata: Llama 3's and Qwen2's pre-tokenizers
(tinyfw/tokenizers/bpe.py's PATTERNS, run by the regex package) split text as Hugging Face's
tokenizers library splits it with the same pattern (its own regex engine, Oniguruma), and a
model's Jinja chat template renders as transformers renders it."""
from __future__ import annotations

import pytest

from tinyfw.tokenizers.bpe import PATTERNS, BPETokenizer, pre_tokenize

tokenizers = pytest.importorskip("tokenizers")
chat = pytest.importorskip("transformers.utils.chat_template_utils")

TEXTS = ["Hello world!", "I'm sure they'll've done it, 'S'LL'D",
         "numbers 1 12 123 1234 12345 ١٢٣ ⅷ", "tabs\tand\n\nnewlines \r\n  x  ",
         "   leading and trailing   ", "emoji 🤗🤗 and 中文字符 mixed", "a.b,c;d!!?? --> ...",
         "x\u00a0y\u2003z", "", " ", "\n", "don't DON'T Don'T", "code: def f(x):\n    return x"]


@pytest.mark.parametrize("kind", sorted(PATTERNS))
def test_pre_tokenizers_split_as_hugging_faces(kind: str) -> None:
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(PATTERNS[kind]),
                                            behavior="isolated")
    for text in TEXTS:
        want = [piece for piece, _ in split.pre_tokenize_str(text)]
        assert pre_tokenize(text, kind) == want, text


LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] "
    "+ '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}")
CHECKING_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] not in ['user', 'assistant'] %}"
    "{{ raise_exception('roles: user and assistant') }}{% endif %}"
    "[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}")


def test_a_jinja_chat_template_renders_as_transformers() -> None:
    tokenizer = BPETokenizer(["<|begin_of_text|>", "<|eot_id|>"], [], pre="qwen2", bos_id=0,
                             eos_id=1, chat_template=LLAMA3_TEMPLATE)
    messages = [{"role": "system", "content": "Be brief. "},
                {"role": "user", "content": "Hi <b>there</b> & {{ not code }}"}]
    for prompt in (True, False):
        want = chat.render_jinja_template([messages], chat_template=LLAMA3_TEMPLATE,
                                          add_generation_prompt=prompt,
                                          bos_token="<|begin_of_text|>",
                                          eos_token="<|eot_id|>")
        want = want[0][0] if isinstance(want, tuple) else want
        assert tokenizer.apply_chat_template(messages, prompt) == want


def test_a_template_that_refuses_says_why() -> None:
    tokenizer = BPETokenizer(["a"], [], pre="gpt2", chat_template=CHECKING_TEMPLATE)
    assert tokenizer.apply_chat_template([{"role": "user", "content": "x"}]) == "[user] x\n"
    with pytest.raises(ValueError, match="roles: user and assistant"):
        tokenizer.apply_chat_template([{"role": "system", "content": "x"}])
