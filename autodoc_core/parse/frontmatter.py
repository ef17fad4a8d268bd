"""YAML frontmatter: find it, load it safely, and coerce declared facets to their types.

The facet schema lives at ``<root>/_schema/frontmatter.yaml``::

    common: {status: string, tags: list}
    types:
      adr: {number: integer, decided: date}

``common`` fields apply to every document, ``types.<name>`` to documents whose ``type`` is
``<name>``. A value that does not fit its type leaves the document indexed and is reported.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autodoc_core.parse.walk import read_inside

FACET_TYPES = ("string", "integer", "date", "boolean", "list")
SCHEMA_RELPATH = "_schema/frontmatter.yaml"
_FENCE_OPEN = "---"
_FENCE_CLOSE = ("---", "...")
# libyaml's safe loader when PyYAML was built with it: same safety, several times faster.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# YAML aliases let a few lines name billions of values ("billion laughs") or one long text many times:
# frontmatter that expands past this many values, or past this many characters of text (or twice its own
# length, if more), is reported and ignored instead of being expanded.
MAX_FRONTMATTER_VALUES = 10_000
MAX_FRONTMATTER_CHARS = 1_000_000
# The schema file's fields over all its types: past this, the rest are left out and reported.
MAX_SCHEMA_FIELDS = 10_000
MAX_SCHEMA_PROBLEMS = 20
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


@dataclass
class Frontmatter:
    fields: dict[str, Any]
    line_count: int  # lines the block occupies, fences included; 0 when there is none
    problem: str | None = None


def split_frontmatter(lines: list[str]) -> Frontmatter:
    """Read a leading ``---`` block. Malformed YAML yields no fields and a problem, never an exception."""
    if not lines or lines[0].rstrip() != _FENCE_OPEN:
        return Frontmatter({}, 0)
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FENCE_CLOSE:
            return _load_yaml("\n".join(lines[1:index]), index + 1)
    return Frontmatter({}, 0, "frontmatter opened with '---' on line 1 is never closed; read as body text")


def _load_yaml(text: str, line_count: int) -> Frontmatter:
    try:
        data = yaml.load(text, Loader=_SafeLoader)
    except yaml.YAMLError as exc:
        return Frontmatter({}, line_count, f"malformed YAML frontmatter{_yaml_fault(exc)}")
    except (RecursionError, ValueError) as exc:
        return Frontmatter({}, line_count, f"malformed YAML frontmatter: {exc}")
    if data is None:
        return Frontmatter({}, line_count)
    if not isinstance(data, dict):  # a '---' rule, prose, another '---': text to index, not fields
        kind = type(data).__name__
        return Frontmatter({}, 0, f"the '---' block on line 1 is a YAML {kind}, not a mapping of fields; "
                                  "read as body text")
    characters = max(MAX_FRONTMATTER_CHARS, 2 * len(text))
    budget = _Budget(MAX_FRONTMATTER_VALUES + 1, characters)  # +1: the mapping itself
    try:
        return Frontmatter(to_json(data, budget=budget), line_count)
    except _TooMuch:
        return Frontmatter({}, line_count, f"frontmatter holds more than {MAX_FRONTMATTER_VALUES:,} values or "
                                           f"{characters:,} characters of text, counting each use of a YAML "
                                           "alias; ignored")


# A top-level `key: plain scalar` line (not quoted, not a list, mapping, block, anchor, alias or tag).
_PLAIN_SCALAR_LINE = re.compile(r"^([^\s#:'\"\[{-][^:]*?):[ \t]+([^\s'\"\[{|>&*!%@`#][^#]*?)\s*$")


def raw_scalars(block: list[str]) -> dict[str, str]:
    """Each top-level field's value as written, for plain scalars (the frontmatter block's lines, fences
    included): YAML 1.1 reads `10:30` as 630, `1.10` as 1.1 and `yes` as true, which no one types back."""
    written: dict[str, str] = {}
    for line in block[1:-1]:
        match = _PLAIN_SCALAR_LINE.match(line)
        if match:
            written.setdefault(match.group(1).strip(), match.group(2))
    return written


class _TooMuch(ValueError):
    pass


class _Budget:
    """How many more values, and characters of text, ``to_json`` may still write."""

    def __init__(self, values: int, characters: int) -> None:
        self.values, self.characters = values, characters

    def charge(self, values: int, characters: int = 0) -> None:
        self.values -= values
        self.characters -= characters
        if self.values < 0 or self.characters < 0:
            raise _TooMuch


def to_json(value: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """YAML values as JSON-safe values (dates as ISO strings, binary as its size). ``budget``: what may still
    be written, charged across the call (``_TooMuch`` past it); None for no limit."""
    if budget is not None:
        budget.charge(1, len(value) if isinstance(value, str) else 0)
    if depth > 20:
        return _short_text(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return f"<binary, {len(value)} bytes>"
    if isinstance(value, dict):
        keys = [str(key) for key in value]
        if budget is not None:
            budget.charge(0, sum(map(len, keys)))  # a long key can be named many times too
        return {key: to_json(v, depth + 1, budget) for key, v in zip(keys, value.values(), strict=True)}
    if isinstance(value, list | tuple | set):
        return [to_json(v, depth + 1, budget) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        if isinstance(value, float) and value != value:
            return None
        return value
    return str(value)


def _short_text(value: Any) -> str:
    """A value nested too deep, as text: a list or mapping by its kind (its str() could be huge), else str()."""
    return f"<{type(value).__name__}>" if isinstance(value, list | tuple | set | dict) else str(value)


def as_string_list(value: Any) -> list[str]:
    """``tags: a, b`` / ``tags: [a, b]`` / ``tags: a`` all become ``["a", "b"]``."""
    if value is None:
        return []
    if isinstance(value, list):
        items = value
    elif isinstance(value, str):
        words = value.split()
        hashtags = len(words) > 1 and all(word.startswith("#") for word in words)  # "#project #idea"
        items = re.split(r"[,\s]+", value) if "," in value or " " not in value.strip() or hashtags else [value]
    else:
        items = [value]
    return [str(item).strip() for item in items if str(item).strip()]


@dataclass
class FacetSchema:
    common: dict[str, str] = field(default_factory=dict)
    types: dict[str, dict[str, str]] = field(default_factory=dict)
    problem: str | None = None
    # No schema file: every frontmatter field of short values is a string facet (see document._facets), and
    # ``common`` lists the fields the workspace's documents have.
    inferred: bool = False

    def declared(self, name: str) -> str | None:
        """The declared type of a field in any section, or None."""
        if name in self.common:
            return self.common[name]
        for fields in self.types.values():
            if name in fields:
                return fields[name]
        if name == "type" and self.types:
            return "string"
        return None

    def spelled(self, name: str) -> str:
        """The declared field a typed name means: itself when declared, else the one declared field that
        differs from it only in case (`Status:draft` for `status`), else the name as typed."""
        if self.declared(name) is not None:
            return name
        matches = [field_name for field_name in self.field_names() if field_name.lower() == name.lower()]
        return matches[0] if len(matches) == 1 else name

    def field_names(self) -> set[str]:
        names = {*self.common, *(f for fields in self.types.values() for f in fields)}
        return names | {"type"} if self.types else names

    def closest(self, name: str) -> str | None:
        """The declared field a mistyped name most likely means (`f5-prodcut` for `f5-product`), or None."""
        names = {field_name.lower(): field_name for field_name in self.field_names()}
        near = difflib.get_close_matches(name.lower(), list(names), n=1, cutoff=0.8)
        return names[near[0]] if near else None

    def fields_for(self, doc_type: str | None) -> dict[str, str]:
        fields = dict(self.common)
        if self.types:
            fields.setdefault("type", "string")
        if doc_type and doc_type in self.types:
            fields.update(self.types[doc_type])
        return fields


def schema_bytes(root: Path) -> bytes | None:
    """The schema file's bytes, or None when there is none inside the root."""
    return read_inside(os.path.realpath(root), str(root / SCHEMA_RELPATH))  # never a file outside the root


def load_schema(root: Path) -> FacetSchema:
    """The root's facet schema."""
    return parse_schema(schema_bytes(root))


def parse_schema(raw: bytes | None) -> FacetSchema:
    """A facet schema from the file's bytes (None: there is no schema file, and the fields are inferred)."""
    if raw is None:
        return FacetSchema(inferred=True)
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        return FacetSchema(problem=f"{SCHEMA_RELPATH}: cannot be read: {str(exc).splitlines()[0]}")
    if data is None:
        return FacetSchema()
    if not isinstance(data, dict):
        return FacetSchema(problem=f"{SCHEMA_RELPATH}: expected a mapping with 'common' and 'types'")
    problems: list[str] = []
    left = _Budget(MAX_SCHEMA_FIELDS, 0)  # fields still to read, over all types: aliases can repeat a long mapping
    common = _field_types(data.get("common"), "common", problems, left)
    types: dict[str, dict[str, str]] = {}
    raw_types = data.get("types") or {}
    if isinstance(raw_types, dict):
        for name, fields in raw_types.items():
            types[str(name)] = _field_types(fields, f"types.{name}", problems, left)
    else:
        problems.append("'types' must map type names to fields")
    if left.values < 0:
        problems.insert(0, f"more than {MAX_SCHEMA_FIELDS:,} fields over all types; the rest are left out")
    return FacetSchema(common, types, _schema_problem(problems))


def _schema_problem(problems: list[str]) -> str | None:
    shown = [f"{SCHEMA_RELPATH}: {p}" for p in problems[:MAX_SCHEMA_PROBLEMS]]
    if len(problems) > MAX_SCHEMA_PROBLEMS:
        shown.append(f"... and {len(problems) - MAX_SCHEMA_PROBLEMS:,} more")
    return "; ".join(shown) or None


def _field_types(raw: Any, where: str, problems: list[str], left: _Budget) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"'{where}' must map field names to types")
        return {}
    fields = {}
    for name, kind in raw.items():
        try:
            left.charge(1)
        except _TooMuch:
            break
        if not isinstance(kind, str):  # str() of an aliased list would expand it
            problems.append(f"{where}.{name}: expected a type name (one of {', '.join(FACET_TYPES)})")
            continue
        kind = kind.strip().lower()
        if kind not in FACET_TYPES:
            problems.append(f"{where}.{name}: unknown type '{kind}' (one of {', '.join(FACET_TYPES)})")
            continue
        fields[str(name)] = kind
    return fields


class CoercionError(ValueError):
    pass


def coerce(value: Any, kind: str) -> list[str]:
    """A facet value as the canonical strings stored and compared (one per list item)."""
    if kind == "list":
        return [scalar_text(v) for v in (value if isinstance(value, list) else as_string_list(value))]
    if isinstance(value, list | dict):
        raise CoercionError(f"expected a {kind}, got a {'list' if isinstance(value, list) else 'mapping'}")
    return [_coerce_scalar(value, kind)]


def folded_twin(text: str) -> str | None:
    """A facet value's case-folded twin, stored and queried beside it, when SQLite's NOCASE (ASCII letters
    only) would not fold it: `owners:çelik` missed `Çelik`."""
    folded = text.casefold()
    return folded if not text.isascii() and folded != text else None


def with_folded(texts: list[str]) -> list[str]:
    """The texts, and the folded twin of each that has one."""
    return texts + [twin for text in texts if (twin := folded_twin(text))]


def scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _coerce_scalar(value: Any, kind: str) -> str:
    text = scalar_text(value)
    if kind == "string":
        return text
    if kind == "integer":
        if isinstance(value, bool):
            raise CoercionError(f"expected an integer, got {text}")
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if re.fullmatch(r"[+-]?\d+", text):
            return str(int(text))
        raise CoercionError(f"expected an integer, got '{text}'")
    if kind == "boolean":
        if text.lower() in _TRUE:
            return "true"
        if text.lower() in _FALSE:
            return "false"
        raise CoercionError(f"expected a boolean, got '{text}'")
    if kind == "date":
        try:
            return dt.date.fromisoformat(text[:10]).isoformat()
        except ValueError:
            raise CoercionError(f"expected a date (YYYY-MM-DD), got '{text}'") from None
    raise CoercionError(f"unknown type {kind}")


def _yaml_fault(exc: yaml.YAMLError) -> str:
    """Where and what: the line of the file (the '---' is line 1) where the broken construct began, when
    PyYAML says ("at line 2: while scanning a quoted scalar, found unexpected end of stream (line 4)": an
    unclosed quote on line 2 is found at the end), else where the problem was found."""
    begun, found = getattr(exc, "context_mark", None), getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    if begun is not None and context and found is not None and begun.line != found.line:
        return f" at line {begun.line + 2}: {context}, {problem} (line {found.line + 2})"
    return (f" at line {found.line + 2}" if found is not None else "") + f": {problem}"
