"""The OpenAI-compatible HTTP API over a BatchEngine: a starlette app (uvicorn runs it).

    GET  /                      the chat page (chat.html)
    GET  /health                {"status": "ok", ...}
    GET  /v1/models             the one model served
    POST /v1/chat/completions   messages in, the assistant's reply out
    POST /v1/completions        a prompt in, its continuation out

Both POSTs take `max_tokens`, `temperature`, `top_p`, `top_k` (not OpenAI's: llama.cpp's and
vLLM's), `seed`, `stop` (a string or up to 4) and `stream`; a streamed reply comes as
server-sent events, `data: {chunk}` lines ending with `data: [DONE]`, the usage counts in a
last chunk when `stream_options.include_usage` is true. Requests are checked (pydantic) before
anything runs: a bad one gets a 4xx JSON body in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`, and the server goes on. What tinyfw does not
do (n > 1, logprobs, tools) is refused the same way, never ignored.

The user's text is tokenized as text: a `<|im_end|>` typed in a message is those characters,
not the special token that closes a turn (chat_ids)."""
from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request as HTTPRequest
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tinyfw.serve.engine import BatchEngine, Event, Request
from tinyfw.tokenizers.bpe import BPETokenizer

PAGE = Path(__file__).with_name("chat.html")


class APIError(Exception):
    """A request refused: its HTTP status and OpenAI's error fields."""

    def __init__(self, status: int, message: str, param: str | None = None,
                 code: str | None = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.kind = \
            status, message, param, code, kind

    def response(self) -> JSONResponse:
        return error_response(self.status, self.message, self.param, self.code, self.kind)


def error_response(status: int, message: str, param: str | None = None,
                   code: str | None = None, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": code}}, status_code=status)


# --- what a request may hold ---
class TextPart(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    type: Literal["text"]
    text: str


class Message(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else \
            "".join(part.text for part in self.content)


class StreamOptions(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    include_usage: bool = False


class Sampling(BaseModel):
    """The fields both POSTs share. Strict: "5" is not a number, 1.5 not an int."""
    model_config = ConfigDict(strict=True, extra="ignore")
    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=0, ge=0)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = Field(default=1, ge=1, le=1)
    logprobs: Literal[False, None] = None

    def stops(self) -> list[str]:
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        if len(stops) > 4:
            raise APIError(400, "stop: at most 4 sequences", "stop")
        if any(not s for s in stops):
            raise APIError(400, "stop: empty strings are not stop sequences", "stop")
        return stops


class ChatRequest(Sampling):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    tools: None = None
    response_format: dict[str, Any] | None = None


class CompletionRequest(Sampling):
    prompt: str | list[str]
    temperature: float = Field(default=1.0, ge=0, le=2)
    echo: Literal[False] = False

    def text(self) -> str:
        if isinstance(self.prompt, str):
            return self.prompt
        if len(self.prompt) != 1:
            raise APIError(400, "prompt: one prompt per request (a list of one string)",
                           "prompt")
        return self.prompt[0]


def request_path(data: Any, loc: tuple[int | str, ...], missing: bool) -> list[int | str]:
    """The part of a pydantic error's location that is in the request: keys and indices
    found in data (and the missing field's name), without the names of the types of a union
    (pydantic's loc for a message's content that is neither: content, then 'str')."""
    path: list[int | str] = []
    for part in loc:
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            if missing and isinstance(data, dict) and part == loc[-1]:
                path.append(part)
            break
        path.append(part)
    return path


def chat_ids(tokenizer: BPETokenizer, messages: list[Message]) -> list[int]:
    """The conversation in SmolLM2's chat template (ChatML), as ids, the messages' own text
    encoded as text (special tokens written in it are not special); the template's default
    system message first when there is none."""
    turns = [(m.role if m.role != "developer" else "system", m.text()) for m in messages]
    if "<|im_start|>" not in tokenizer.special or "<|im_end|>" not in tokenizer.special:
        # another model's template (tinyfw.llm serve --model FILE): its Jinja text, encoded
        # with the special tokens it writes (a message's own text is not kept apart there)
        text = tokenizer.apply_chat_template([{"role": r, "content": t} for r, t in turns])
        encoded = tokenizer.encode(text)
        bos = tokenizer.bos_id
        return [bos, *encoded] if tokenizer.add_bos and bos is not None and \
            encoded[:1] != [bos] else encoded
    start, end = tokenizer.special["<|im_start|>"], tokenizer.special["<|im_end|>"]
    system = tokenizer.default_system_prompt()
    if turns[0][0] != "system" and system is not None:
        turns.insert(0, ("system", system))
    ids: list[int] = []
    for role, text in turns:
        ids += [start, *tokenizer.encode(f"{role}\n{text}", special=False), end,
                *tokenizer.encode("\n", special=False)]
    return ids + [start, *tokenizer.encode("assistant\n", special=False)]


class StopText:
    """Text pieces in, the text to show out, cut before the first stop sequence; a tail that
    might be the start of one is held back until it is known not to be."""

    def __init__(self, stops: list[str]):
        self.stops, self.held, self.stopped = stops, "", False

    def feed(self, piece: str) -> str:
        text = self.held + piece
        found = [i for i in (text.find(s) for s in self.stops) if i >= 0]
        if found:
            self.stopped, self.held = True, ""
            return text[:min(found)]
        keep = max((n for s in self.stops for n in range(1, len(s))
                    if text.endswith(s[:n])), default=0)
        self.held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        text, self.held = self.held, ""
        return text


class Server:
    """The app's state: one engine and its tokenizer, the model's name, an optional key."""

    def __init__(self, engine: BatchEngine, tokenizer: BPETokenizer, name: str,
                 api_key: str | None = None):
        self.engine, self.tokenizer, self.name, self.api_key = engine, tokenizer, name, api_key
        self.created = int(time.time())
        self.stop_ids = tuple(i for i in (tokenizer.eos_id,
                                          tokenizer.special.get("<|endoftext|>"),
                                          tokenizer.special.get("<|im_end|>"))
                              if i is not None)

    # --- routes ---
    async def page(self, request: HTTPRequest) -> Response:
        return HTMLResponse(PAGE.read_text(encoding="utf-8"))

    async def health(self, request: HTTPRequest) -> Response:
        return JSONResponse({"status": "ok", "model": self.name, "slots": self.engine.slots,
                             "running": self.engine.busy,
                             "waiting": self.engine.pending.qsize(),
                             "steps": self.engine.steps, "peak_running": self.engine.peak})

    async def models(self, request: HTTPRequest) -> Response:
        return JSONResponse({"object": "list", "data": [self._model_card()]})

    def _model_card(self) -> dict[str, Any]:
        return {"id": self.name, "object": "model", "created": self.created,
                "owned_by": "tinyfw"}

    async def chat(self, request: HTTPRequest) -> Response:
        body = await self._parse(request, ChatRequest)
        assert isinstance(body, ChatRequest)
        ids = chat_ids(self.tokenizer, body.messages)
        limit = body.max_completion_tokens or body.max_tokens
        return await self._generate(request, body, ids, limit, chat=True)

    async def complete(self, request: HTTPRequest) -> Response:
        body = await self._parse(request, CompletionRequest)
        assert isinstance(body, CompletionRequest)
        ids = self.tokenizer.encode(body.text(), special=False)
        if not ids:
            raise APIError(400, "prompt: empty", "prompt")
        # (OpenAI's default for completions: 16 tokens; for chat: the rest of the context)
        return await self._generate(request, body, ids, body.max_tokens or 16, chat=False)

    # --- the work ---
    async def _parse(self, request: HTTPRequest, kind: type[Sampling]) -> Sampling:
        raw = await request.body()
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise APIError(400, f"the body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise APIError(400, "the body must be a JSON object")
        try:
            body = kind.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            param = ".".join(str(p) for p in request_path(data, first["loc"],
                                                          first["type"] == "missing")) or None
            raise APIError(400, f"{param}: {first['msg']}" if param else first["msg"],
                           param) from None
        if body.model != self.name:
            raise APIError(404, f"the model {body.model!r} does not exist; this server has "
                           f"{self.name!r}", "model", "model_not_found")
        return body

    async def _generate(self, request: HTTPRequest, body: Sampling, ids: list[int],
                        limit: int | None, chat: bool) -> Response:
        context = self.engine.model.max_context
        if len(ids) + 1 > context:
            raise APIError(400, f"the prompt is {len(ids)} tokens; this model's context is "
                           f"{context} (prompt and reply)", "messages" if chat else "prompt",
                           "context_length_exceeded")
        if limit is not None and limit > context:
            raise APIError(400, f"max_tokens is {limit}; this model's context is {context}",
                           "max_tokens")
        stops = body.stops()
        loop, events = asyncio.get_running_loop(), asyncio.Queue[Event]()

        def emit(event: Event) -> None:  # (on the engine's thread)
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:  # the loop is closed: the server is stopping
                pass
        job = Request(ids=ids, max_tokens=min(limit or context, context - len(ids)), emit=emit,
                      temperature=body.temperature, top_k=body.top_k, top_p=body.top_p,
                      seed=body.seed, stop_ids=self.stop_ids)
        self.engine.submit(job)
        reply = Reply(self, body, ids, job, events, StopText(stops), chat)
        if body.stream:
            return StreamingResponse(reply.chunks(), media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        try:
            return JSONResponse(await reply.whole(request))
        finally:
            job.cancel()


class Reply:
    """One request's tokens turned into OpenAI's response, whole or streamed."""

    def __init__(self, server: Server, body: Sampling, ids: list[int], job: Request,
                 events: asyncio.Queue[Event], stops: StopText, chat: bool):
        self.server, self.body, self.ids, self.job, self.events = server, body, ids, job, events
        self.stops, self.chat = stops, chat
        self.id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.object = "chat.completion" if chat else "text_completion"
        self.tokens = 0
        self.finish: str | None = None

    async def pieces(self, disconnected: Callable[[], Awaitable[bool]] | None = None
                     ) -> AsyncIterator[str]:
        """The reply's text as it comes, then self.finish set."""
        stream = self.server.tokenizer.streamer()
        while self.finish is None:
            try:
                kind, value = await asyncio.wait_for(self.events.get(), timeout=1.0)
            except asyncio.TimeoutError:
                if disconnected is not None and await disconnected():
                    self.job.cancel()
                    self.finish = "cancelled"
                continue
            if kind == "error":
                raise APIError(500, str(value), kind="server_error")
            if kind == "end":
                tail = self.stops.feed(stream.flush()) + self.stops.flush()
                if tail:
                    yield tail
                self.finish = str(value)
                return
            self.tokens += 1
            text = self.stops.feed(stream(int(value)))
            if text:
                yield text
            if self.stops.stopped:
                self.job.cancel()
                self.finish = "stop"

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": len(self.ids), "completion_tokens": self.tokens,
                "total_tokens": len(self.ids) + self.tokens}

    async def whole(self, request: HTTPRequest) -> dict[str, Any]:
        text = "".join([p async for p in self.pieces(request.is_disconnected)])
        choice: dict[str, Any] = {"index": 0, "finish_reason": self.finish}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice.update(text=text, logprobs=None)
        return {"id": self.id, "object": self.object, "created": self.created,
                "model": self.server.name, "choices": [choice], "usage": self.usage()}

    def _chunk(self, delta: dict[str, Any] | str | None, finish: str | None) -> str:
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if self.chat:
            choice["delta"] = delta or {}
        else:
            choice.update(text=delta or "", logprobs=None)
        chunk = {"id": self.id, "object": "chat.completion.chunk" if self.chat else
                 "text_completion", "created": self.created, "model": self.server.name,
                 "choices": [choice]}
        return f"data: {json.dumps(chunk)}\n\n"

    async def chunks(self) -> AsyncIterator[str]:
        """Server-sent events. A client that goes away cancels this generator (starlette
        stops it), and the finally tells the engine, which frees the slot at its next step."""
        try:
            if self.chat:
                yield self._chunk({"role": "assistant", "content": ""}, None)
            try:
                async for piece in self.pieces():
                    yield self._chunk({"content": piece} if self.chat else piece, None)
            except APIError as e:
                yield f"data: {json.dumps({'error': {'message': e.message, 'type': e.kind}})}\n\n"
                return
            yield self._chunk(None, self.finish)
            options = self.body.stream_options
            if options is not None and options.include_usage:
                last = json.loads(self._chunk(None, None)[6:])
                last.update(choices=[], usage=self.usage())
                yield f"data: {json.dumps(last)}\n\n"
            yield "data: [DONE]\n\n"
        finally:
            self.job.cancel()


def create_app(engine: BatchEngine, tokenizer: BPETokenizer, name: str,
               api_key: str | None = None) -> Starlette:
    """The ASGI app serving engine's model under name; api_key: /v1 needs
    `Authorization: Bearer <api_key>` (401 without)."""
    server = Server(engine, tokenizer, name, api_key)

    async def api_error(request: HTTPRequest, exc: Exception) -> Response:
        assert isinstance(exc, APIError)
        return exc.response()

    async def http_error(request: HTTPRequest, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return error_response(exc.status_code, str(exc.detail), kind=kind)

    routes = [Route("/", server.page), Route("/health", server.health),
              Route("/v1/models", server.models),
              Route("/v1/chat/completions", server.chat, methods=["POST"]),
              Route("/v1/completions", server.complete, methods=["POST"])]
    app = Starlette(routes=routes, exception_handlers={APIError: api_error,
                                                       HTTPException: http_error})
    if api_key is not None:
        app.add_middleware(BearerAuth, api_key=api_key)
    return app


class BearerAuth:
    """ASGI middleware: every /v1 request must carry `Authorization: Bearer <key>`."""

    def __init__(self, app: Any, api_key: str):
        self.app, self.expected = app, f"Bearer {api_key}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1"):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                response = error_response(401, "a valid API key is needed: "
                                          "Authorization: Bearer <key>",
                                          code="invalid_api_key")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
