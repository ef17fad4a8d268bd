"""The numpy encoder against vectors recorded once with sentence-transformers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autodoc_core.minilm import BertEncoder

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def encoder() -> BertEncoder:
    return BertEncoder()


def test_matches_sentence_transformers(encoder: BertEncoder) -> None:
    ours = encoder.embed(REFERENCE["texts"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.9999, cosines


def test_caps_at_256_tokens_like_the_reference(encoder: BertEncoder) -> None:
    long_text = REFERENCE["texts"][6]
    assert encoder.count_tokens([long_text]) == [256]


def test_batching_and_order_do_not_change_vectors(encoder: BertEncoder) -> None:
    texts = REFERENCE["texts"]
    together = encoder.embed(texts, batch_tokens=64)
    alone = np.vstack([encoder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert encoder.embed([]).shape == (0, 384)
