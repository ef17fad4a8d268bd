"""Identifiers in a chunk, collected at parse time for the symbol retriever: its heading if it is one, code
spans, fenced code, and hex hashes, error codes, paths and flags in prose. Each qualified name is also
looked up by its shorter suffixes (``lookup_keys``)."""

from __future__ import annotations

import re

from autodoc_core.parse.markdown import code_spans, without_code_spans

# Where a symbol occurs says how likely the chunk defines it.
WEIGHT_HEADING, WEIGHT_CODE_SPAN, WEIGHT_FENCE, WEIGHT_PROSE = 4, 2, 2, 1
MIN_HEX = 7

# A fence opens with a whole run of backticks (possessive): a long run with no partner then costs one pass. Code
# spans are paired by parse.markdown.code_spans.
_FENCE = re.compile(r"^(?P<fence>```++|~~~++)[^\n]*\n(?P<code>.*?)(?:^(?P=fence)[ \t]*$|\Z)", re.S | re.M)

KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("path", re.compile(r"(?<![\w~])[A-Za-z_~][\w~]*(?:::[A-Za-z_~][\w~]*)+")),
    # Pieces of at most 200 characters (longer symbols are never kept): from every "$" or ":" of a long run the
    # pattern read to the run's end.
    ("dotted", re.compile(r"(?<![\w.-])[A-Za-z_$][\w$-]{0,199}(?:\.[A-Za-z_$][\w$-]{0,199})+(?![\w(])")),
    ("call", re.compile(r"(?<![\w.])[A-Za-z_$][\w$.:]{0,199}(?=\()")),
    ("flag", re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")),
    ("screaming_case", re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")),
    ("snake_case", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")),
    ("camel_case", re.compile(r"\b(?:[a-z][a-z0-9]*[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*\b")),
    ("error_code", re.compile(r"(?<![\w.-])-\d{4,6}\b|\b[A-Z]{1,5}-?\d{3,6}\b")),
    ("hex", re.compile(r"\b[0-9a-f]{7,40}\b")),
]


def is_hex_hash(text: str) -> bool:
    return len(text) >= MIN_HEX and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


# A kind is only looked for when its tell-tale character is in the text at all.
_GATES = {"path": "::", "dotted": ".", "call": "(", "flag": "--", "screaming_case": "_", "snake_case": "_"}
PROSE_KINDS = {"hex", "error_code", "screaming_case", "path", "flag"}  # dotted prose is mostly "e.g." and URLs


def identifiers(text: str, kinds: set[str] | None = None) -> list[tuple[str, str]]:
    """(identifier, kind) pairs found in text, longest forms first, each once."""
    found: dict[str, str] = {}
    for kind, pattern in KINDS:
        if (kinds is not None and kind not in kinds) or (kind in _GATES and _GATES[kind] not in text):
            continue
        for match in pattern.finditer(text):
            token = match.group(0)
            if kind == "hex" and not is_hex_hash(token):
                continue
            if kind == "call":
                token = token.rstrip(".:")
            found.setdefault(token, kind)
    return list(found.items())


def lookup_keys(symbol: str) -> list[tuple[str, bool]]:
    """The symbol itself, then each shorter qualified suffix (``b.c``, ``c`` for ``a.b.c``)."""
    parts = re.split(r"(::|\.)", symbol)
    names = parts[0::2]
    keys = [(symbol, False)]
    if len(names) > 1 and all(names):
        for start in range(1, len(names)):
            keys.append(("".join(parts[start * 2 :]), True))
    return keys


def chunk_symbols(breadcrumb: str, body: str) -> list[tuple[str, int]]:
    """(symbol, weight) for one chunk: its heading if it is an identifier, code spans, fenced code,
    and hex hashes or error codes in prose."""
    weights: dict[str, int] = {}

    def add(symbol: str, weight: int) -> None:
        symbol = symbol.strip()
        if 2 <= len(symbol) <= 200:
            weights[symbol] = max(weights.get(symbol, 0), weight)

    heading = breadcrumb.rsplit(" › ", 1)[-1].strip().strip("`")
    in_heading = identifiers(heading)
    for token, _kind in in_heading:
        add(token, WEIGHT_HEADING if token == heading or len(in_heading) == 1 else WEIGHT_PROSE)
    for match in _FENCE.finditer(body):
        for token, _kind in identifiers(match.group("code")):
            add(token, WEIGHT_FENCE)
    prose = _FENCE.sub(" ", body)
    for start, end, ticks in code_spans(prose):
        span = prose[start + ticks : end - ticks].strip()
        if span and not any(c.isspace() for c in span):
            add(span.split("(", 1)[0] if "(" in span else span, WEIGHT_CODE_SPAN)
        for token, _kind in identifiers(span):
            add(token, WEIGHT_CODE_SPAN)
    for token, _kind in identifiers(without_code_spans(prose), PROSE_KINDS):
        add(token, WEIGHT_PROSE)
    return list(weights.items())


def symbol_keys(symbols: list[tuple[str, int]]) -> list[tuple[str, bool, int]]:
    """(key, is a suffix, weight) for each way a chunk's symbols are looked up."""
    return [(key, is_suffix, weight) for symbol, weight in symbols for key, is_suffix in lookup_keys(symbol)]
