"""Write a BERT-family sentence encoder as an ONNX graph, from ``config.json`` and ``model.safetensors``.

No PyTorch: the graph is written node by node with the ``onnx`` package's helper API. It computes
what sentence-transformers computes for all-MiniLM-L6-v2: embeddings (word + position + token type 0,
LayerNorm), N encoder layers (self-attention under the attention mask, exact erf GELU feed-forward,
post-LayerNorm), then the mean over the mask's tokens and L2 normalisation.

The nodes are laid out as PyTorch's exporter lays out a Hugging Face BERT (separate Q/K/V MatMul+Add,
Reshape/Transpose per head, a ``(1 - mask) * -10000`` bias, the Div/Erf/Add/Mul/Mul GELU), so that
onnxruntime's transformer optimizer recognises them and fuses Attention, SkipLayerNormalization and
BiasGelu.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17  # LayerNormalization is an ONNX op from 17 on
GRAPH_VERSION = "1"  # bump when the graph written here changes: cached graphs are keyed by it
SUPPORTED_ACTIVATIONS = ("gelu",)


class UnsupportedModel(ValueError):
    """The folder's model is not a BERT encoder this module can write (the reason says why)."""


def load_weights(model_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``config.json`` and the float32 weights, with the ``bert.`` prefix some checkpoints carry removed."""
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    activation = config.get("hidden_act", "gelu")
    if activation not in SUPPORTED_ACTIVATIONS:
        raise UnsupportedModel(f"hidden_act {activation!r} is not supported (only {', '.join(SUPPORTED_ACTIVATIONS)})")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise UnsupportedModel(f"position_embedding_type {config['position_embedding_type']!r} is not supported")
    weights = load_file(str(model_dir / "model.safetensors"))
    return config, {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in weights.items()}


class _Writer:
    """Collects nodes and initialisers; every name it hands out is unique."""

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value: np.ndarray | float | list[int], hint: str = "const") -> str:
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        name = self.name(hint)
        self.initializers.append(self.numpy_helper.from_array(array, name))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        array = self.weights[key]
        return self.const(np.ascontiguousarray(array.T) if transpose else array, key.replace(".", "_"))

    def op(self, op_type: str, inputs: list[str], hint: str | None = None, **attributes: Any) -> str:
        output = self.name(hint or op_type.lower())
        self.nodes.append(self.helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, prefix: str) -> str:
        product = self.op("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)])
        return self.op("Add", [product, self.weight(f"{prefix}.bias")])

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op("LayerNormalization", [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
                       axis=-1, epsilon=eps)


def build_model(model_dir: Path) -> Any:
    """The encoder as an ``onnx.ModelProto``: inputs ``input_ids`` and ``attention_mask`` (int64,
    [batch, sequence]); output ``embedding`` (float32, [batch, hidden], unit rows)."""
    from onnx import TensorProto, helper

    config, weights = load_weights(Path(model_dir))
    eps = float(config.get("layer_norm_eps", 1e-12))
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    w = _Writer(weights)
    x = _embeddings(w, eps)
    mask_bias = _mask_bias(w)
    for index in range(int(config["num_hidden_layers"])):
        x = _encoder_layer(w, x, mask_bias, f"encoder.layer.{index}", heads, hidden // heads, eps)
    _mean_pool_normalise(w, x)
    graph = helper.make_graph(
        w.nodes, "sentence_encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        w.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="autodoc")
    model.ir_version = 8  # readable by every onnxruntime from 1.15 on
    return model


def _embeddings(w: _Writer, eps: float) -> str:
    """word[ids] + position[0..S) + token_type[0], then LayerNorm (every text is one segment)."""
    words = w.op("Gather", [w.weight("embeddings.word_embeddings.weight"), "input_ids"], axis=0)
    length = w.op("Slice", [w.op("Shape", ["input_ids"]), w.const([1]), w.const([2])])
    positions = w.op("Slice", [w.weight("embeddings.position_embeddings.weight"), w.const([0]), length, w.const([0])])
    summed = w.op("Add", [words, positions])
    token_type = w.const(w.weights["embeddings.token_type_embeddings.weight"][0], "token_type_0")
    summed = w.op("Add", [summed, token_type])
    return w.layer_norm(summed, "embeddings.LayerNorm", eps)


def _mask_bias(w: _Writer) -> str:
    """[batch, 1, 1, sequence]: 0 where the mask is 1, -10000 on padding (exp() of it is 0 in float32)."""
    mask = w.op("Unsqueeze", ["attention_mask", w.const([1, 2])])
    mask = w.op("Cast", [mask], to=1)  # FLOAT
    inverted = w.op("Sub", [w.const(np.float32(1.0)), mask])
    return w.op("Mul", [inverted, w.const(np.float32(-10000.0))])


def _heads(w: _Writer, x: str, heads: int, head_size: int, perm: list[int]) -> str:
    split = w.op("Reshape", [x, w.const(np.array([0, 0, heads, head_size], dtype=np.int64))])
    return w.op("Transpose", [split], perm=perm)


def _encoder_layer(w: _Writer, x: str, mask_bias: str, prefix: str, heads: int, head_size: int, eps: float) -> str:
    q = _heads(w, w.linear(x, f"{prefix}.attention.self.query"), heads, head_size, [0, 2, 1, 3])
    k = _heads(w, w.linear(x, f"{prefix}.attention.self.key"), heads, head_size, [0, 2, 3, 1])
    v = _heads(w, w.linear(x, f"{prefix}.attention.self.value"), heads, head_size, [0, 2, 1, 3])
    scores = w.op("Div", [w.op("MatMul", [q, k]), w.const(np.float32(np.sqrt(head_size)))])
    probs = w.op("Softmax", [w.op("Add", [scores, mask_bias])], axis=-1)
    context = w.op("Transpose", [w.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    context = w.op("Reshape", [context, w.const(np.array([0, 0, heads * head_size], dtype=np.int64))])
    attended = w.linear(context, f"{prefix}.attention.output.dense")
    x = w.layer_norm(w.op("Add", [attended, x]), f"{prefix}.attention.output.LayerNorm", eps)
    up = w.linear(x, f"{prefix}.intermediate.dense")
    erf = w.op("Erf", [w.op("Div", [up, w.const(np.float32(np.sqrt(2.0)))])])
    gelu = w.op("Mul", [w.op("Mul", [up, w.op("Add", [erf, w.const(np.float32(1.0))])]), w.const(np.float32(0.5))])
    down = w.linear(gelu, f"{prefix}.output.dense")
    return w.layer_norm(w.op("Add", [down, x]), f"{prefix}.output.LayerNorm", eps)


def _mean_pool_normalise(w: _Writer, x: str) -> None:
    """Mean over the mask's tokens, divided by max(norm, 1e-12), into the graph output ``embedding``."""
    mask = w.op("Cast", [w.op("Unsqueeze", ["attention_mask", w.const([-1])])], to=1)
    summed = w.op("ReduceSum", [w.op("Mul", [x, mask]), w.const([1])], keepdims=0)
    count = w.op("Max", [w.op("ReduceSum", [mask, w.const([1])], keepdims=0), w.const(np.float32(1e-9))])
    mean = w.op("Div", [summed, count])
    norm = w.op("Max", [w.op("ReduceL2", [mean], axes=[1], keepdims=1), w.const(np.float32(1e-12))])
    w.nodes.append(w.helper.make_node("Div", [mean, norm], ["embedding"], name="embedding"))
