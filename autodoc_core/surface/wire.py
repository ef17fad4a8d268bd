"""JSON as the wire carries it: strict (no NaN or Infinity) and always encodable as UTF-8."""

from __future__ import annotations

import json
from typing import Any


def to_json(value: Any, indent: int | None = None) -> str:
    """A lone surrogate that came in escaped (a client cut a string in the middle of an emoji) goes out
    escaped again instead of failing the write; a NaN raises ValueError."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    try:
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(value, allow_nan=False, indent=indent)
    return text
