"""Serving a language model over HTTP (`python -m tinyfw.llm serve`): an OpenAI-compatible API
and a chat page (api.py, chat.html) over an engine that decodes the running requests together,
one forward pass for all of them (engine.py). Needs the `serve` extra (starlette, uvicorn)."""
