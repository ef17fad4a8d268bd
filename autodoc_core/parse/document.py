"""One Markdown file, parsed: metadata from frontmatter, tags, links, facets and chunks.

Bad input never raises here: invalid UTF-8 is indexed with replacement characters, malformed
YAML leaves the body indexed, and every such problem is returned for ``workspace.status``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from autodoc_core.parse import frontmatter as fm
from autodoc_core.parse.chunk import Chunk, LineTable, abstract_chunk, section_chunks
from autodoc_core.parse.markdown import name_key, parse_structure, path_key, reference_keys
from autodoc_core.parse.symbols import chunk_symbols

# Aliases a document keeps (each is written into every one of its chunks' weighted column).
MAX_ALIASES = 64


@dataclass
class ParsedDocument:
    title: str
    doc_type: str | None
    status: str | None
    aliases: list[str]
    tags: list[str]
    meta: dict[str, Any]
    supersedes: list[str]
    superseded_by: list[str]
    facets: list[tuple[str, str]]
    keys: list[str]
    link_keys: list[str]
    chunks: list[Chunk]
    line_count: int
    problems: list[str] = field(default_factory=list)


def decode(raw: bytes) -> tuple[str, str | None]:
    """Text for parsing; invalid sequences become U+FFFD, and newlines (always valid) stay where they were."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        return text, f"invalid UTF-8 at byte {exc.start}; indexed with U+FFFD replacement characters"


def parse_document(raw: bytes, relpath: str, schema: fm.FacetSchema, section_tokens: int) -> ParsedDocument:
    text, problem = decode(raw)
    if text.startswith("\ufeff"):
        text = text[1:]
    problems = [problem] if problem else []
    lines = text.replace("\r\n", "\n").replace("\r", " ").split("\n")
    table = LineTable(raw)
    front = fm.split_frontmatter(lines)
    if front.problem:
        problems.append(front.problem)
    fields = front.fields
    body_lines = [""] * front.line_count + lines[front.line_count :]
    structure = parse_structure("\n".join(body_lines), relpath)

    stem = posixpath.splitext(posixpath.basename(relpath))[0]
    title = _text_field(fields.get("title")) or structure.first_h1 or stem
    # Every chunk's weighted column repeats the aliases and tags: a long list would be written once per chunk.
    aliases = _unique(fm.as_string_list(fields.get("aliases") or fields.get("alias")))[:MAX_ALIASES]
    tags = _unique([t.lstrip("#").lower() for t in fm.as_string_list(fields.get("tags"))] + structure.tags)
    doc_type = _text_field(fields.get("type"))
    status = _text_field(fields.get("status"))
    facets, facet_problems = _facets(fields, schema, doc_type, lines[: front.line_count])
    problems.extend(facet_problems)

    chunks = section_chunks(lines, table, structure.blocks, title, section_tokens)
    abstract = fields.get("abstract")
    if isinstance(abstract, str) and abstract.strip():
        chunks.insert(0, abstract_chunk(lines, table, front.line_count, title, abstract))
    if not chunks:
        chunks = section_chunks(lines, table, [], title, section_tokens)
    for chunk in chunks:
        chunk.symbols = chunk_symbols(chunk.breadcrumb, chunk.body)

    keys = _unique([path_key(relpath), name_key(stem), name_key(title)] + [name_key(a) for a in aliases])
    return ParsedDocument(
        title=title,
        doc_type=doc_type,
        status=status.lower() if status else None,
        aliases=aliases,
        tags=tags,
        meta=fields,
        supersedes=_references(fields.get("supersedes")),
        superseded_by=_references(fields.get("superseded_by")),
        facets=facets,
        keys=keys,
        link_keys=structure.link_keys,
        chunks=chunks,
        line_count=table.line_count,
        problems=problems,
    )


def _text_field(value: Any) -> str | None:
    if value is None or isinstance(value, list | dict):
        return None
    text = str(value).strip()
    return text or None


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))


def _references(value: Any) -> list[str]:
    return _unique([str(v).strip() for v in (value if isinstance(value, list) else [value]) if v is not None])


def reference_key_sets(references: list[str], relpath: str) -> list[list[str]]:
    return [reference_keys(ref, relpath) for ref in references]


def _facets(
    fields: dict[str, Any], schema: fm.FacetSchema, doc_type: str | None, frontmatter_lines: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    if schema.inferred:  # only then are the values as written read
        return _inferred_facets(fields, fm.raw_scalars(frontmatter_lines)), []
    facets: list[tuple[str, str]] = []
    problems: list[str] = []
    for name, kind in schema.fields_for(doc_type).items():
        if name not in fields or fields[name] is None:
            continue
        try:
            values = fm.coerce(fields[name], kind)
            facets.extend((name, value) for value in (fm.with_folded(values) if kind in ("string", "list") else values)
                          if value)
        except fm.CoercionError as exc:
            problems.append(f"frontmatter field '{name}': {exc} (declared {kind}); not usable as a facet")
    return facets, problems


# Fields that are prose, or filters already (tags), are not inferred facets; a name must be typable as
# `name:value` in a query.
NOT_INFERRED = frozenset({"title", "tags", "tag", "aliases", "alias", "abstract", "description", "summary"})
_INFERRED_NAME = re.compile(r"[^\s\"':]+")
MAX_INFERRED_FIELDS, MAX_INFERRED_VALUES, MAX_INFERRED_CHARS = 50, 50, 100


def _inferred_facets(fields: dict[str, Any], written: dict[str, str]) -> list[tuple[str, str]]:
    """Without a schema file, each frontmatter field whose values are short scalars is a string facet
    (`status: superseded` makes `-status:superseded` a filter): the facet filters in the README's first
    example matched nothing until one wrote _schema/frontmatter.yaml. Field names are lower-cased (`Status`
    and `status` are one field, typed in any case); a value is kept as YAML read it and as written
    (`start: 10:30` is 630 to YAML 1.1, `version: 1.10` is 1.1, `draft: no` is false), and a timestamp also
    by its date."""
    facets: dict[tuple[str, str], None] = {}
    named = [name for name in fields if isinstance(name, str) and name.lower() not in NOT_INFERRED
             and _INFERRED_NAME.fullmatch(name)]
    for name in named[:MAX_INFERRED_FIELDS]:
        values = fields[name] if isinstance(fields[name], list) else [fields[name]]
        texts = [fm.scalar_text(value) for value in values[:MAX_INFERRED_VALUES]
                 if value is not None and not isinstance(value, list | dict)]
        if name in written:
            texts.append(written[name])
        texts += [text[:10] for text in texts if _TIMESTAMP.match(text)]
        facets.update(((name.lower(), text), None) for text in fm.with_folded(texts)
                      if 0 < len(text) <= MAX_INFERRED_CHARS)
    return list(facets)


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d")
