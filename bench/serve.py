"""`python -m tinyfw.llm serve` under 1 and under 4 concurrent clients: total generated tokens
per second, and the ratio (batched decoding: the 4 clients' requests share each decode step).

    .venv/bin/python -m bench.serve                        # 4 requests per client, 32 tokens
    .venv/bin/python -m bench.serve --tokens 64 --requests 2 --slots 4

The server runs in a process of its own on loopback (warmed up: its decode step and prefills
captured by TinyJit before the first client). Each client sends greedy chat requests one after
the other, not streamed, max_tokens fixed, with a short system message (prompts of ~20
tokens), so that the time is mostly decoding; the prefills (one request at a time, between
steps) are counted too. Tokens/s = the completion tokens of all requests / the wall time from
the first request to the last answer. The row of 1 client is the server's own: its step has the
same shapes (all slots run every step), so it is slower than `python -m tinyfw.llm` alone (see
bench/llm.py for that)."""
from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ["Write a short poem about the sea.", "Tell me about cats.",
             "Explain what a CPU does.", "Describe a sunny day."]


def start_server(slots: int, context: int) -> tuple[subprocess.Popen[str], str, int]:
    proc = subprocess.Popen([sys.executable, "-m", "tinyfw.llm", "serve", "--port", "0",
                             "--slots", str(slots), "--context", str(context)], cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = ""
    while "tinyfw serve: http://" not in line:
        ready, _, _ = select.select([proc.stdout], [], [], 1800)
        line = proc.stdout.readline() if ready else ""
        if not line and proc.poll() is not None:
            raise SystemExit("the server did not start")
    host, port = line.split("http://", 1)[1].split()[0].rsplit(":", 1)
    return proc, host, int(port)


def ask(host: str, port: int, question: str, tokens: int) -> int:
    """One greedy chat request; its completion tokens."""
    conn = http.client.HTTPConnection(host, port, timeout=1800)
    conn.request("POST", "/v1/chat/completions", body=json.dumps({
        "model": "SmolLM2-135M-Instruct", "max_tokens": tokens, "temperature": 0,
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": question}]}),
        headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    if response.status != 200:
        raise RuntimeError(body)
    return int(body["usage"]["completion_tokens"])


def clients(host: str, port: int, n: int, requests: int, tokens: int) -> tuple[int, float]:
    """n clients, each sending requests one after the other: (tokens, seconds)."""
    counts = [0] * n

    def run(i: int) -> None:
        for r in range(requests):
            counts[i] += ask(host, port, QUESTIONS[(i + r) % len(QUESTIONS)], tokens)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=32, help="max_tokens of each request")
    parser.add_argument("--requests", type=int, default=4, help="requests per client")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--context", type=int, default=256)
    args = parser.parse_args()
    proc, host, port = start_server(args.slots, args.context)
    try:
        rates = {}
        for n in (1, 4):
            tokens, seconds = clients(host, port, n, args.requests, args.tokens)
            rates[n] = tokens / seconds
            print(f"serve  {n} client{'s' if n > 1 else ' '}  {tokens:4d} tokens in "
                  f"{seconds:6.1f} s  {rates[n]:6.2f} tokens/s", flush=True)
        print(f"serve  4 clients / 1 client: {rates[4] / rates[1]:.2f}x (target 2.5x)")
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
