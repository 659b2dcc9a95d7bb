"""Batched decoding: several conversations advance together, one forward pass per step.

A decode step of a small model on a CPU is bound by reading its weights: each matmul reads the
whole weight matrix to multiply one vector. Multiply B vectors instead, one per conversation,
and the weights are read once for all of them: B tokens for little more than the price of one.
That is what a serving engine does (continuous batching, as in vLLM or llama.cpp's server):

  slots     the KV cache is (slots, heads, max_context, head_dim) per layer: each running
            request owns one slot (one row of the batch) and its own position in it;
  join      a new request is prefilled alone (batch 1, the model's own cache) and its keys and
            values copied into a free slot, between two steps;
  step      one jitted forward pass of (slots, 1) tokens, each row at its own position
            (Llama.forward with a position tensor (B,)): rows write their own slot of the
            cache and their masks see only their own positions. Free slots run too (a token
            0 at position 0): the step always has the same shapes, so TinyJit captures it once,
            and a request's tokens are the same whoever else is running (rows never mix);
  leave     a request that finishes (a stop token, max_tokens, a full context) or whose client
            went away (Request.cancel, seen at the next step) frees its slot.

Choosing the token: greedy is the step's argmax, on the device. Sampling (temperature > 0)
happens on the host, from the step's logits, with a numpy generator per request (seeded by
the request's `seed`): each request has its own settings and its own random numbers, so a
seeded request gives the same answer alone or in a batch.

All tinyfw work happens on the engine's one thread; the server's threads only put requests in
and read tokens out (Request.events)."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tinyfw.dtype import dtypes
from tinyfw.jit.jit import TinyJit
from tinyfw.models.gguf import QUANTIZED
from tinyfw.models.llama import Llama
from tinyfw.tensor import Tensor

# What a request is told, in order: ("token", id) for each token, then ("end", reason) with
# reason "stop" (a stop token) or "length" (max_tokens or the context), or ("error", message).
Event = tuple[str, int | str]


@dataclass
class Request:
    """One generation: prompt token ids in, tokens out through `emit` (called on the engine's
    thread; the server passes a function that hands them to its event loop)."""
    ids: list[int]
    max_tokens: int
    emit: Callable[[Event], None]
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    stop_ids: tuple[int, ...] = ()
    cancelled: threading.Event = field(default_factory=threading.Event)
    # set by the engine
    position: int = 0
    generated: int = 0
    last: int = 0  # the last token delivered: the next step's input
    rng: np.random.Generator | None = None

    def cancel(self) -> None:
        """The client went away: the engine frees the slot at its next step."""
        self.cancelled.set()


def sample(logits: np.ndarray, temperature: float, top_k: int, top_p: float,
           rng: np.random.Generator) -> int:
    """A token drawn from softmax(logits / temperature) restricted to the top_k most likely
    (0: all) and then to the fewest most likely holding top_p of the probability (1: all)."""
    scaled = logits.astype(np.float64) / temperature
    order = np.argsort(-scaled, kind="stable")
    if 0 < top_k < len(order):
        order = order[:top_k]
    probs = np.exp(scaled[order] - scaled[order[0]])
    probs /= probs.sum()
    if top_p < 1:
        keep = int(np.searchsorted(np.cumsum(probs), top_p)) + 1
        order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
    return int(order[rng.choice(len(order), p=probs)])


class BatchEngine:
    """Runs requests on a Llama, up to `slots` at once, on a thread of its own (start())."""

    def __init__(self, model: Llama, slots: int = 4):
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.model, self.slots = model, slots
        c, device = model.config, model.device
        shape = (slots, c.n_kv_heads, model.max_context, c.head_dim)
        self.caches = [(Tensor.zeros(*shape, device=device).contiguous().realize(),
                        Tensor.zeros(*shape, device=device).contiguous().realize())
                       for _ in model.blocks]
        self.slot_ids = Tensor.arange(slots, device=device).reshape(slots, 1, 1, 1)
        self.running: list[Request | None] = [None] * slots
        self.pending: queue.Queue[Request] = queue.Queue()
        self.steps = 0  # decode steps run, and the most requests one of them ran (/health)
        self.peak = 0
        self._step = TinyJit(self._decode)
        self._prefills: dict[int, TinyJit] = {}  # a captured prefill per padded length
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the server's side (any thread) ---
    def submit(self, request: Request) -> None:
        if not request.ids:
            raise ValueError("the prompt has no tokens")
        if len(request.ids) + 1 > self.model.max_context:
            raise ValueError(f"the prompt has {len(request.ids)} tokens; the context holds "
                             f"{self.model.max_context}")
        self.pending.put(request)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="tinyfw-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def warm_up(self, prompts: list[list[int]], tokens: int = 3) -> None:
        """Before start(): run each prompt twice for a few tokens, so that TinyJit has captured
        the decode step and these prompts' prefills before the first client comes."""
        for ids in prompts:
            for _ in range(2):
                request = Request(ids=ids, max_tokens=tokens, emit=lambda event: None)
                self._join(request, 0)
                while self.busy:
                    self.step()
        self.steps = self.peak = 0

    @property
    def busy(self) -> int:
        return sum(r is not None for r in self.running)

    # --- the engine's thread ---
    def run(self) -> None:
        while not self._stop.is_set():
            self._admit()
            if not self.busy:
                continue
            try:
                self.step()
            except Exception as e:  # (tell the running requests; the engine goes on)
                for slot, request in enumerate(self.running):
                    if request is not None:
                        request.emit(("error", f"{type(e).__name__}: {e}"))
                        self.running[slot] = None

    def _admit(self) -> None:
        """Prefill waiting requests into free slots (waiting a little when nothing runs)."""
        while None in self.running:
            try:
                request = self.pending.get(timeout=0.05) if not self.busy else \
                    self.pending.get_nowait()
            except queue.Empty:
                return
            if request.cancelled.is_set():
                continue
            try:
                self._join(request, self.running.index(None))
            except Exception as e:  # (a failure of one request must not stop the engine)
                request.emit(("error", f"{type(e).__name__}: {e}"))

    def _join(self, request: Request, slot: int) -> None:
        rows, last = self.model.padded_rows(request.ids)
        size = rows.shape[1]
        if size not in self._prefills:
            self._prefills[size] = TinyJit(self._prefill)
        token, logits = self._prefills[size](
            rows, last, Tensor([slot], dtype=dtypes.int32, device=self.model.device))
        request.position = len(request.ids)
        request.rng = np.random.default_rng(request.seed)
        first = int(token.item()) if request.temperature == 0 else \
            self._sample(request, logits.numpy()[0])
        if self._deliver(request, first):
            self.running[slot] = request

    def _prefill(self, rows: Tensor, last: Tensor, slot: Tensor) -> tuple[Tensor, Tensor]:
        """A prompt padded to a bucket's length (rows (1, L, ...), Llama.padded_rows) run from
        position 0 in the model's own cache (Llama.last_hidden), then copied into the slot's
        rows of the batch's cache; the argmax and the logits (1, vocab) of its last real
        position (index last)."""
        model = self.model
        logits = model.output(model.norm(model.last_hidden(rows, last)))[:, -1]
        chosen = self.slot_ids == slot.reshape(1, 1, 1, 1)
        for block, (k, v) in zip(model.blocks, self.caches):
            k.assign(chosen.where(block.attn.cache_k, k))
            v.assign(chosen.where(block.attn.cache_v, v))
        token = logits.argmax(-1).cast(dtypes.int32)
        Tensor.realize_all(token, logits, *self._state(), *model._state())
        return token, logits

    def _state(self) -> list[Tensor]:
        return [t for pair in self.caches for t in pair]

    def _decode(self, rows: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """One token for each slot (rows (slots, 1, ...)) at its position: the argmax of each
        row's logits, and the logits (slots, vocab)."""
        logits = self.model.forward(rows, positions, caches=self.caches)[:, -1]
        tokens = logits.argmax(-1).cast(dtypes.int32)
        Tensor.realize_all(tokens, logits, *self._state())
        return tokens, logits

    def rows(self, tokens: list[int]) -> Tensor:
        """The embedding rows (len(tokens), 1, ...) of tokens, as Llama.rows picks them."""
        model, name = self.model, "token_embd.weight"
        if model.embedding.type in QUANTIZED:
            picked = model.file.blocks(name)[tokens]
        else:
            picked = model.file.numpy(name)[tokens].astype(np.float32)
        return Tensor(np.ascontiguousarray(picked[:, None]), device=model.device)

    def step(self) -> None:
        """Drop the cancelled requests, run one decode step for all slots, deliver a token to
        each running request."""
        for slot, request in enumerate(self.running):
            if request is not None and request.cancelled.is_set():
                self.running[slot] = None
        if not self.busy:
            return
        last = [r.last if r is not None else 0 for r in self.running]
        places = [r.position if r is not None else 0 for r in self.running]
        tokens, logits = self._step(self.rows(last),
                                    Tensor(places, dtype=dtypes.int32, device=self.model.device))
        self.steps += 1
        self.peak = max(self.peak, self.busy)
        greedy = tokens.numpy()
        scores = logits.numpy() if any(r is not None and r.temperature > 0
                                       for r in self.running) else None
        for slot, request in enumerate(self.running):
            if request is None:
                continue
            request.position += 1
            token = int(greedy[slot]) if request.temperature == 0 or scores is None else \
                self._sample(request, scores[slot])
            if not self._deliver(request, token):
                self.running[slot] = None

    def _sample(self, request: Request, logits: np.ndarray) -> int:
        assert request.rng is not None
        return sample(logits, request.temperature, request.top_k, request.top_p, request.rng)

    def _deliver(self, request: Request, token: int) -> bool:
        """Hand token to the request; whether it goes on (needs another step)."""
        if request.cancelled.is_set():
            return False
        if token in request.stop_ids:
            request.emit(("end", "stop"))
            return False
        request.emit(("token", token))
        request.generated += 1
        request.last = token
        if request.generated >= request.max_tokens or \
                request.position >= self.model.max_context:
            request.emit(("end", "length"))
            return False
        return True
