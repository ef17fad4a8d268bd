"""Result shaping: at most N chunks per document, superseded documents below their successor,
and a snippet around the first query word."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MAX_PER_DOCUMENT = 3
SNIPPET_CHARS = 240


@dataclass
class Candidate:
    hit: dict[str, Any]
    doc_id: int
    successor_id: int | None
    superseded: bool


def cap_per_document(candidates: list[Candidate], cap: int = MAX_PER_DOCUMENT) -> list[Candidate]:
    counts: dict[int, int] = {}
    kept = []
    for candidate in candidates:
        counts[candidate.doc_id] = counts.get(candidate.doc_id, 0) + 1
        if counts[candidate.doc_id] <= cap:
            kept.append(candidate)
    return kept


def demote_superseded(candidates: list[Candidate]) -> list[Candidate]:
    """Move each superseded document's hits directly below its successor's hits, when both appear."""
    present = {c.doc_id for c in candidates}
    pending = [c for c in candidates if c.superseded and c.successor_id in present]
    result = [c for c in candidates if c not in pending]
    while pending:
        placed = [c for c in pending if any(r.doc_id == c.successor_id for r in result)]
        if not placed:  # a supersession cycle: keep the rest in their order, at the end
            return result + pending
        for candidate in placed:
            index = max(i for i, r in enumerate(result) if r.doc_id == candidate.successor_id)
            while index + 1 < len(result) and result[index + 1].successor_id == candidate.successor_id \
                    and result[index + 1].superseded:
                index += 1
            result.insert(index + 1, candidate)
            pending.remove(candidate)
    return result


_SPACE = re.compile(r"\s+")


def snippet(body: str, words: list[str], size: int = SNIPPET_CHARS) -> str:
    """About ``size`` characters of the body around the first query word, whitespace folded."""
    lower = body.lower()
    position = -1
    for word in words:
        found = lower.find(word[: max(4, len(word) - 2)])
        if found != -1 and (position == -1 or found < position):
            position = found
    start = 0 if position <= size // 3 else position - size // 3
    if start:
        space = body.find(" ", start, position)
        start = space + 1 if space != -1 else start
    window = _SPACE.sub(" ", body[start : start + size * 2]).strip()
    text = window[:size].rstrip()
    prefix = "…" if start else ""
    suffix = "…" if len(window) > size or start + size * 2 < len(body) else ""
    return prefix + text + suffix
