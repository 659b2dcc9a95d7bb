"""silero-vad's voice activity detector (the .onnx file inside the silero-vad package, never
imported) through tinyfw.onnx against onnxruntime: the speech probability of each 32 ms chunk
of a signal made here (silence, voice-like harmonics, noise), the model's recurrent state
carried from chunk to chunk by each runtime."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from tinyfw.onnx import OnnxRunner  # noqa: E402

RATE, CHUNK = 16000, 512


def silero_path() -> Path:
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("silero-vad is not installed (data-packages.txt)")
    return Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"


def signal() -> np.ndarray:
    """4 chunks of silence, 8 of a voice-like sound (harmonics of 150 Hz, its loudness
    rising and falling 3 times a second), 3 of faint noise."""
    rng = np.random.default_rng(0)
    t = np.arange(8 * CHUNK) / RATE
    voice = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 6))
    voice = 0.3 * voice * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
    return np.concatenate([np.zeros(4 * CHUNK), voice,
                           0.01 * rng.standard_normal(3 * CHUNK)]).astype(np.float32)


def test_speech_probabilities_match_onnxruntime_chunk_after_chunk() -> None:
    path = silero_path()
    runner = OnnxRunner(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    sr = np.array(RATE, np.int64)
    state = ref_state = np.zeros((2, 1, 128), np.float32)
    ours, theirs = [], []
    audio = signal()
    for start in range(0, len(audio), CHUNK):
        chunk = audio[None, start:start + CHUNK]
        out = runner({"input": chunk, "state": state, "sr": sr})
        state = out["stateN"].numpy()
        ours.append(out["output"].numpy().item())
        prob, ref_state = session.run(None, {"input": chunk, "state": ref_state, "sr": sr})
        theirs.append(prob.item())
        np.testing.assert_allclose(state, ref_state, atol=1e-4, err_msg=f"state at {start}")
    np.testing.assert_allclose(ours, theirs, atol=1e-4)
    assert max(ours[:4]) < 0.1, f"silence taken for speech: {ours}"
