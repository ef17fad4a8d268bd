"""The local encoder (onnxruntime) against vectors recorded once with sentence-transformers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def encoder() -> OnnxEncoder:
    return OnnxEncoder(default_model_dir())


def test_matches_sentence_transformers(encoder: OnnxEncoder) -> None:
    ours = encoder.embed(REFERENCE["texts"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.9999, cosines


def test_caps_at_256_tokens_like_the_reference(encoder: OnnxEncoder) -> None:
    long_text = REFERENCE["texts"][6]
    assert encoder.count_tokens([long_text]) == [256]


def test_batching_and_order_do_not_change_vectors(encoder: OnnxEncoder) -> None:
    texts = REFERENCE["texts"]
    together = encoder.embed(texts, batch_tokens=64)
    alone = np.vstack([encoder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert encoder.embed([]).shape == (0, 384)


def test_any_bert_folder_can_be_named(tmp_path) -> None:
    import shutil

    from autodoc_core.providers.embedders import make_embedder

    folder = tmp_path / "my-bert"
    shutil.copytree(default_model_dir(), folder)
    embedder = make_embedder({"provider": "local", "model_dir": str(folder)})
    assert embedder.model_fp == "local:my-bert:384:l2"
    vector = embedder.embed([REFERENCE["texts"][0]], "query")[0]
    assert float(vector @ np.asarray(REFERENCE["vectors"][0], dtype=np.float32)) > 0.9999


def test_a_bad_model_dir_is_refused_at_configure(engine, kb) -> None:
    from autodoc_core.errors import AutodocError

    engine.workspace_add("kb", str(kb))
    with pytest.raises(AutodocError) as caught:
        engine.workspace_configure("kb", {"embedder": {"provider": "local", "model_dir": str(kb)}})
    assert caught.value.code == -32602 and "model.safetensors" in caught.value.reason


def test_a_model_that_vanishes_is_a_clear_embed_error(engine, kb, tmp_path) -> None:
    import shutil

    from autodoc_core.errors import AutodocError

    folder = tmp_path / "vanishing"
    shutil.copytree(default_model_dir(), folder)
    (kb / "a.md").write_text("# A\n\ntext\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": {"provider": "local", "model_dir": str(folder)}})
    (folder / "model.safetensors").unlink()
    with pytest.raises(AutodocError) as caught:
        engine.workspace_index("kb", {"wait": "semantic"})
    assert caught.value.code == -32067 and "cannot load the model" in caught.value.reason
    assert engine.search_query("kb", "text", None).to_wire()["hits"][0]["path"] == "a.md"  # lexical still answers
