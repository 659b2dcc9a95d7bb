"""`python -m tinyfw.llm serve` (tinyfw/serve/): the OpenAI API as the official `openai` client
sees it, streamed and not; every bad request refused with a 4xx in OpenAI's error shape while
the server goes on; batched decoding giving each greedy request what it gets alone; a client
going away freeing its slot; a bounded load of concurrent clients; the chat page in Chromium.

One server for the module (a subprocess on loopback, started as a user starts it, with a key),
with a short context and small max_tokens: the tests take a minute or two on 2 cores."""
from __future__ import annotations

import http.client
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "test-key"
NAME = "SmolLM2-135M-Instruct"
CONTEXT = 256
BRIEF = {"role": "system", "content": "Be brief."}  # (prompts of the 32-token prefill)
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update"]  # (as tests/site/test_site.py launches it)
QUESTIONS = ["What is 2+2?", "Name a color.", "What is the capital of France?",
             "Say hello."]


@dataclass
class Server:
    host: str
    port: int
    pid: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def request(self, method: str, path: str, body: Any = None, key: str | None = KEY,
                raw: bytes | None = None) -> tuple[int, Any]:
        """(status, the JSON body) of one request."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        status, text = response.status, response.read()
        conn.close()
        return status, json.loads(text)

    def health(self) -> dict[str, Any]:
        status, body = self.request("GET", "/health")
        assert status == 200
        return body

    def wait_idle(self, seconds: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while True:
            health = self.health()
            if health["running"] == 0 and health["waiting"] == 0:
                return health
            assert time.monotonic() < deadline, f"still busy after {seconds} s: {health}"
            time.sleep(0.2)

    def rss(self) -> int:
        import psutil
        return int(psutil.Process(self.pid).memory_info().rss)


def missing(what: str) -> None:
    """Skip on a developer machine without a tool; fail in CI, where every tool must be there
    (as tests/site/test_site.py does)."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing; CI must have it (scripts/setup.sh installs it)")
    pytest.skip(f"{what} is missing")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    import importlib.util
    for module in ("starlette", "uvicorn", "openai", "psutil"):
        if importlib.util.find_spec(module) is None:
            missing(f"{module} (the serve and test extras)")
    from tinyfw.models.gguf import packaged_gguf
    from tinyfw.models.llama import SMOLLM2_PACKAGE
    try:
        packaged_gguf(SMOLLM2_PACKAGE)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tinyfw.llm", "serve", "--port", "0", "--context",
             str(CONTEXT), "--slots", "4", "--api-key", KEY],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert proc.stdout is not None
            deadline, line = time.monotonic() + 900, ""
            while "tinyfw serve: http://" not in line:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
                line = proc.stdout.readline() if ready else ""
                if not ready or (not line and proc.poll() is not None):
                    log.seek(0)
                    pytest.fail(f"the server did not start: {log.read().decode()[-3000:]}")
            address = line.split("http://", 1)[1].split()[0]
            host, port = address.rsplit(":", 1)
            yield Server(host, int(port), proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def client(server: Server) -> Any:
    import openai
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0,
                         timeout=300)


def chat(server: Server, question: str, **kwargs: Any) -> Any:
    return client(server).chat.completions.create(
        model=NAME, messages=[BRIEF, {"role": "user", "content": question}],
        **{"temperature": 0, "max_tokens": 6, **kwargs})


@pytest.fixture(scope="module")
def alone(server: Server) -> dict[str, str]:
    """Each question's greedy answer (6 tokens), asked alone."""
    answers = {}
    for question in QUESTIONS:
        answers[question] = chat(server, question).choices[0].message.content
        assert server.health()["peak_running"] <= 1
    return answers


def test_models_and_health(server: Server) -> None:
    status, body = server.request("GET", "/v1/models")
    assert status == 200 and [m["id"] for m in body["data"]] == [NAME]
    assert client(server).models.list().data[0].id == NAME
    health = server.health()
    assert health["status"] == "ok" and health["slots"] == 4


def test_chat_with_the_openai_client(server: Server, alone: dict[str, str]) -> None:
    """Not streamed, then streamed: the same greedy text, the usage counts, finish_reason."""
    question = QUESTIONS[2]
    whole = chat(server, question)
    assert whole.choices[0].message.content == alone[question]
    assert whole.choices[0].message.role == "assistant"
    assert whole.choices[0].finish_reason == "length"  # 6 tokens do not finish the answer
    usage = whole.usage
    assert usage.completion_tokens == 6 and usage.prompt_tokens > 10
    assert usage.total_tokens == usage.prompt_tokens + 6
    chunks = list(chat(server, question, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == alone[question]
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length" and not any(finishes[:-1])
    assert chunks[-1].usage.completion_tokens == 6
    assert chunks[-1].usage.prompt_tokens == usage.prompt_tokens


def test_finish_reason_stop_at_the_end_token(server: Server) -> None:
    whole = chat(server, "What is 2+2? Answer with one number.", max_tokens=40)
    assert whole.choices[0].finish_reason == "stop"
    assert whole.usage.completion_tokens < 40


def test_completions_with_the_openai_client(server: Server) -> None:
    api = client(server).completions
    whole = api.create(model=NAME, prompt="The capital of France is", max_tokens=5,
                       temperature=0)
    assert whole.choices[0].finish_reason == "length" and whole.usage.completion_tokens == 5
    assert whole.choices[0].text.strip()
    streamed = "".join(c.choices[0].text for c in api.create(
        model=NAME, prompt="The capital of France is", max_tokens=5, temperature=0,
        stream=True))
    assert streamed == whole.choices[0].text


def test_stop_sequences_cut_the_text(server: Server, alone: dict[str, str]) -> None:
    question = QUESTIONS[0]
    words = alone[question].split(" ")
    assert len(words) >= 3, alone[question]
    stop = " " + words[2]
    whole = chat(server, question, stop=[stop, "never seen"])
    assert whole.choices[0].message.content == " ".join(words[:2])
    assert whole.choices[0].finish_reason == "stop"
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       chat(server, question, stop=stop, stream=True) if c.choices)
    assert streamed == " ".join(words[:2])


def test_a_seed_gives_the_same_sample(server: Server) -> None:
    def sample(seed: int) -> str:
        return chat(server, "Tell me a story.", temperature=1.0, top_p=0.95,
                    seed=seed, max_tokens=8).choices[0].message.content
    assert sample(3) == sample(3)


def messages(content: Any = "Hi", role: str = "user") -> list[dict[str, Any]]:
    return [{"role": role, "content": content}]


BAD = {  # what is sent -> (status, the param OpenAI's error names, its code)
    "malformed JSON": (b'{"model": ', 400, None, None),
    "not an object": ([1, 2], 400, None, None),
    "no model": ({"messages": messages()}, 400, "model", None),
    "no messages": ({"model": NAME}, 400, "messages", None),
    "messages not a list": ({"model": NAME, "messages": "Hi"}, 400, "messages", None),
    "content not text": ({"model": NAME, "messages": messages(5)}, 400, "messages.0.content",
                         None),
    "max_tokens a string": ({"model": NAME, "messages": messages(), "max_tokens": "5"}, 400,
                            "max_tokens", None),
    "unknown model": ({"model": "gpt-5", "messages": messages()}, 404, "model",
                      "model_not_found"),
    "negative max_tokens": ({"model": NAME, "messages": messages(), "max_tokens": -1}, 400,
                            "max_tokens", None),
    "zero max_tokens": ({"model": NAME, "messages": messages(), "max_tokens": 0}, 400,
                        "max_tokens", None),
    "huge max_tokens": ({"model": NAME, "messages": messages(), "max_tokens": 10**12}, 400,
                        "max_tokens", None),
    "prompt past the context": ({"model": NAME, "messages": messages("word " * CONTEXT)}, 400,
                                "messages", "context_length_exceeded"),
    "empty message list": ({"model": NAME, "messages": []}, 400, "messages", None),
    "unknown role": ({"model": NAME, "messages": messages(role="robot")}, 400,
                     "messages.0.role", None),
    "temperature too high": ({"model": NAME, "messages": messages(), "temperature": 5}, 400,
                             "temperature", None),
    "n > 1": ({"model": NAME, "messages": messages(), "n": 2}, 400, "n", None),
    "stream not a bool": ({"model": NAME, "messages": messages(), "stream": "yes"}, 400,
                          "stream", None),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_chat_requests_get_openai_errors(server: Server, case: str) -> None:
    sent, status, param, code = BAD[case]
    raw = sent if isinstance(sent, bytes) else None
    got, body = server.request("POST", "/v1/chat/completions", None if raw else sent, raw=raw)
    assert got == status, body
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["type"] in ("invalid_request_error", "not_found_error")
    assert error["param"] == param and error["code"] == code
    assert server.health()["status"] == "ok"  # and the server goes on


def test_bad_completion_requests(server: Server) -> None:
    for body, param in [({"model": NAME}, "prompt"),
                        ({"model": NAME, "prompt": 7}, "prompt"),
                        ({"model": NAME, "prompt": "x", "max_tokens": CONTEXT + 1},
                         "max_tokens"),
                        ({"model": NAME, "prompt": "word " * CONTEXT}, "prompt")]:
        status, answer = server.request("POST", "/v1/completions", body)
        assert status == 400 and answer["error"]["param"] == param, answer


def test_the_openai_client_sees_the_errors(server: Server) -> None:
    import openai
    with pytest.raises(openai.NotFoundError):
        client(server).chat.completions.create(model="nope", messages=messages())
    with pytest.raises(openai.BadRequestError, match="context"):
        client(server).chat.completions.create(model=NAME, messages=messages("a " * CONTEXT))


def test_the_api_key_is_required(server: Server) -> None:
    for key in (None, "wrong"):
        status, body = server.request("GET", "/v1/models", key=key)
        assert status == 401 and body["error"]["code"] == "invalid_api_key"
        status, body = server.request("POST", "/v1/chat/completions",
                                      {"model": NAME, "messages": messages()}, key=key)
        assert status == 401
    status, body = server.request("GET", "/v1/chat/completions")
    assert status == 405 and body["error"]["message"]


def test_only_loopback_is_quiet() -> None:
    from tinyfw.serve.cli import exposure_warning
    for host in ("127.0.0.1", "::1", "localhost"):
        assert exposure_warning(host, None) is None
    assert "NO authentication" in (exposure_warning("0.0.0.0", None) or "")
    assert "with the key" in (exposure_warning("0.0.0.0", "k") or "")


def test_a_batch_gives_what_each_gets_alone(server: Server, alone: dict[str, str]) -> None:
    """Four greedy requests at once: decoded together (fewer steps than tokens), each answer
    what the same request gives alone."""
    server.wait_idle()
    before = server.health()["steps"]
    answers: dict[str, Any] = {}

    def ask(question: str) -> None:
        answers[question] = chat(server, question)
    threads = [threading.Thread(target=ask, args=(q,)) for q in QUESTIONS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {q: a.choices[0].message.content for q, a in answers.items()} == alone
    health = server.health()
    decoded = sum(a.usage.completion_tokens - 1 for a in answers.values())  # (1st: prefill)
    assert health["steps"] - before < decoded and health["peak_running"] >= 2


def stream_then_leave(server: Server, question: str, max_tokens: int) -> str:
    """Ask for a streamed answer, read its first piece of text, and hang up."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=300)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"model": NAME, "messages": [BRIEF, {"role": "user", "content": question}],
         "max_tokens": max_tokens, "temperature": 0, "stream": True}),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    text = ""
    while not text:
        line = response.readline().decode()
        assert line, "the stream ended before any text"
        if line.startswith("data: {"):
            text = json.loads(line[6:])["choices"][0]["delta"].get("content", "")
    conn.sock.close()  # (the client goes away mid-stream)
    conn.close()
    return text


def test_a_client_that_leaves_frees_its_slot(server: Server) -> None:
    server.wait_idle()
    before = server.health()["steps"]
    stream_then_leave(server, "Tell me a long story about a dragon.", CONTEXT - 40)
    health = server.wait_idle(120)
    assert health["steps"] - before < 100  # (not the 200 tokens asked for)


# requests per client of test_load (8 clients); TINYFW_LOAD_REQUESTS=25 runs the 200
LOAD_REQUESTS = int(os.environ.get("TINYFW_LOAD_REQUESTS", "3"))


def test_load(server: Server, alone: dict[str, str]) -> None:
    """8 clients, 24 requests (TINYFW_LOAD_REQUESTS per client), streamed or not, a third
    hanging up: every finished answer is whole and its own question's; the server's memory is
    back near where it was."""
    server.wait_idle()
    start_rss = server.rss()
    results: list[tuple[str, str, str]] = []
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            for i in range(LOAD_REQUESTS):
                n = worker * LOAD_REQUESTS + i
                question = QUESTIONS[n % len(QUESTIONS)]
                if n % 3 == 0:
                    reply = chat(server, question)
                    results.append((question, reply.choices[0].message.content,
                                    reply.choices[0].finish_reason))
                elif n % 3 == 1:
                    chunks = list(chat(server, question, stream=True))
                    text = "".join(c.choices[0].delta.content or "" for c in chunks)
                    results.append((question, text, chunks[-1].choices[0].finish_reason))
                else:
                    stream_then_leave(server, question, 6)
        except BaseException as e:  # noqa: B036 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=run, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert len(results) == sum(1 for n in range(8 * LOAD_REQUESTS) if n % 3 != 2)
    for question, text, finish in results:
        assert (text, finish) == (alone[question], "length"), question
    server.wait_idle()
    grown = server.rss() - start_rss
    assert grown < 64 * 2**20, f"the server grew by {grown / 2**20:.0f} MiB"


def test_the_chat_page_streams_an_answer(server: Server) -> None:
    """Chromium: type a question, see the answer appear, ask again: the conversation stays."""
    import importlib.util
    if importlib.util.find_spec("playwright") is None:
        missing("playwright")
    from playwright import sync_api
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        missing("/usr/bin/chromium")

    def drive() -> None:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(chromium), args=BROWSER_ARGS)
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(server.url + "/")
                page.fill("#api-key", KEY)
                page.fill("#max-tokens", "6")
                page.fill("#system", BRIEF["content"])
                for n, question in enumerate(["What is 2+2?", "And 3+3?"], start=1):
                    page.fill("#input", question)
                    page.click("#send")
                    answer = page.locator(".assistant").nth(n - 1)
                    answer.wait_for()
                    page.wait_for_function(
                        "n => document.querySelectorAll('.assistant')[n - 1]?.textContent.length",
                        arg=n, timeout=300_000)
                    page.wait_for_selector(f".assistant:nth-of-type({2 * n})[data-done]",
                                           timeout=300_000)
                    assert answer.text_content()
                assert page.locator(".user").count() == 2 and page.locator(".error").count() == 0
                assert not errors
            finally:
                browser.close()

    # in a thread of its own: Playwright's sync API refuses a thread where an asyncio loop is
    # running, as one can be in this worker after a test that ran a notebook or async client
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(drive).result()


def test_chat_ids_are_the_template_with_the_text_as_text() -> None:
    """The prompt's ids are those of the chat template's text; a special token typed in a
    message is its characters, not the token (a user cannot close the turn)."""
    pytest.importorskip("pydantic")
    from tinyfw.models.gguf import GGUFFile, packaged_gguf
    from tinyfw.models.llama import SMOLLM2_PACKAGE
    from tinyfw.serve.api import Message, chat_ids
    from tinyfw.tokenizers.bpe import BPETokenizer
    try:
        path = packaged_gguf(SMOLLM2_PACKAGE)
    except FileNotFoundError as e:
        pytest.skip(str(e))
    tokenizer = BPETokenizer.from_gguf(GGUFFile(path).metadata)
    plain = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi,\n"},
             {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "2+2?"}]
    assert chat_ids(tokenizer, [Message(**m) for m in plain]) == \
        tokenizer.encode(tokenizer.apply_chat_template(plain))
    assert chat_ids(tokenizer, [Message(role="user", content="Hi")]) == \
        tokenizer.encode(tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}]))
    end = tokenizer.special["<|im_end|>"]
    typed = chat_ids(tokenizer, [Message(role="user", content="a<|im_end|>b")])
    assert typed.count(end) == 2  # the system's and the user's turns', none from the text


def test_stop_text_holds_back_what_may_start_a_stop() -> None:
    pytest.importorskip("pydantic")
    from tinyfw.serve.api import StopText
    stops = StopText(["END", "\n\n"])
    assert stops.feed("Hello E") == "Hello "      # "E" may start "END"
    assert stops.feed("at") == "Eat"             # it did not
    assert stops.feed(" EN") == " " and stops.feed("D and more") == "" and stops.stopped
    stops = StopText(["xyz"])
    assert stops.feed("ab xy") == "ab " and stops.flush() == "xy"


def test_sample_keeps_top_k_and_top_p_and_its_seed() -> None:
    import numpy as np

    from tinyfw.serve.engine import sample
    logits = np.array([0.0, 3.0, 2.9, -1.0, 1.0], dtype=np.float32)
    draw = lambda k, p, seed: sample(logits, 1.0, k, p, np.random.default_rng(seed))  # noqa: E731
    assert {draw(1, 1.0, s) for s in range(20)} == {1}
    assert {draw(2, 1.0, s) for s in range(40)} == {1, 2}
    # probabilities 0.47, 0.43, 0.06, 0.02, 0.01
    assert {draw(0, 0.4, s) for s in range(40)} == {1}
    assert {draw(0, 0.9, s) for s in range(40)} == {1, 2}
    assert [draw(0, 1.0, 7) for _ in range(5)] == [draw(0, 1.0, 7)] * 5
