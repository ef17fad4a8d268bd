"""Markdown structure with markdown-it-py: top-level blocks with line spans, headings, tags, links.

Only what chunking and the link graph need is extracted. Line numbers are 0-based and refer to
the whole file (frontmatter lines are blanked, not removed, before parsing).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

MARKDOWN_SUFFIXES = (".md", ".markdown")
_HEADING_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
_INLINE_TAG = re.compile(r"(?<![\w#&/\\{])#([^\W\d][\w/-]*)")
_WIKI_LINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_URL_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_BACKTICK_RUN = re.compile(r"`+")
# Possessive where giving characters back can never lead to a match, and a destination or title never reads past
# a "[" (the next link), so that each character is read from at most one "](": a pattern reading on from every
# "](" to the text's end is quadratic in a text of many of them.
_MARKDOWN_LINK = re.compile(
    r"\[(?:[^\[\]]|\[[^\[\]]*\])*+\]\(\s*+<?([^)\s>\[]++)>?(?:\s+[\"'(][^)\[]*+)?\)")
# Emphasis marks, not snake_case; possessive, and a closing run starts a run, so that a long run of marks is
# read once, not once from each of its characters.
_HEADING_MARKUP = re.compile(r"(?<![\w*_~])[*_~]++|(?<![*_~])[*_~]++(?![\w*_~])|\\(?=[^\w\s])")


@dataclass
class Block:
    start: int
    end: int
    heading_level: int = 0
    heading_text: str = ""
    hidden: bool = False  # an HTML comment, an empty anchor, a rule, a table of contents: not indexed


# An HTML block of comments and empty elements only (``<span id="setup"></span>``, a link target put
# before the next heading), and a list item of in-page links only (a table of contents).
_COMMENTS_ONLY = re.compile(
    r"\s*(?:(?:<!--(?:(?!-->).)*-->|<(a|span|div)\b[^<>]*>\s*</\1\s*>|<(?:a|span|div)\b[^<>]*/>)\s*)+",
    re.DOTALL | re.IGNORECASE)  # a comment cannot span "-->"
_LIST_STRUCTURE = {f"{kind}_{side}" for kind in ("bullet_list", "ordered_list", "list_item", "paragraph")
                   for side in ("open", "close")}
_ANCHOR_LINKS_ONLY = re.compile(r"\s*(?:\[[^\]\n]*\]\(#[^)\s]*\)\s*)+")


@dataclass
class MarkdownStructure:
    blocks: list[Block] = field(default_factory=list)
    first_h1: str | None = None
    tags: list[str] = field(default_factory=list)
    link_keys: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Block structure only: inline parsing is most of markdown-it's time, and what we need from
    # inline text (heading words, #tags, links) regular expressions over it find faster.
    return MarkdownIt("commonmark", {"maxNesting": 40}).enable("table").disable("inline")


def strip_markdown_extension(path: str) -> str:
    lower = path.lower()
    for suffix in MARKDOWN_SUFFIXES:
        if lower.endswith(suffix):
            return path[: -len(suffix)]
    return path


def path_key(relpath: str) -> str:
    return "path:" + strip_markdown_extension(relpath).lower()


def name_key(name: str) -> str:
    return "name:" + strip_markdown_extension(name.strip()).lower()


def reference_keys(reference: str, from_relpath: str = "") -> list[str]:
    """Keys a wiki-style reference may resolve through, most likely first: a path from the root,
    a path from the referring document's folder, a name (file stem, title or alias)."""
    reference = reference.strip()
    if not reference:
        return []
    if "/" in reference:
        candidates = [reference.strip("/")]
        if from_relpath and not reference.startswith("/"):
            candidates.append(resolve_relative(reference, from_relpath) or "")
        return list(dict.fromkeys(path_key(c) for c in candidates if c))
    return [name_key(reference), path_key(reference)]


def resolve_relative(href: str, from_relpath: str) -> str | None:
    """A link target as a path relative to the root, or None when it leaves the root."""
    if href.startswith("/"):
        joined = href.lstrip("/")
    else:
        joined = posixpath.join(posixpath.dirname(from_relpath), href)
    normal = posixpath.normpath(joined)
    if normal.startswith("../") or normal == ".." or normal.startswith("/"):
        return None
    return normal


def heading_plain_text(inline: Token) -> str:
    """The heading as a reader sees it: links as their text, emphasis marks and backslash escapes gone, and
    inline code as written without its backticks (``Identify `-` and `_` on crates.io`` keeps its ``_``)."""
    text = _MARKDOWN_LINK.sub(lambda m: m.group(0)[1 : m.group(0).index("](")], inline.content)
    parts, position = [], 0
    for start, end, length in code_spans(text):
        parts += [_HEADING_MARKUP.sub("", text[position:start]), _code_text(text[start + length : end - length])]
        position = end
    parts.append(_HEADING_MARKUP.sub("", text[position:].replace("`", "")))
    return _HEADING_ANCHOR.sub("", "".join(parts)).strip()


def _code_text(inside: str) -> str:
    """An inline code span's text, as CommonMark gives it: one space stripped from each side when both have one
    and the span is not all spaces."""
    if len(inside) > 1 and inside[0] == inside[-1] == " " and inside.strip(" "):
        return inside[1:-1]
    return inside


def parse_structure(text: str, relpath: str) -> MarkdownStructure:
    tokens = _parser().parse(text)
    result = MarkdownStructure()
    tags: dict[str, None] = {}
    links: dict[str, None] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "inline":
            _scan_inline(token, relpath, tags, links)
        if token.level == 0 and token.map is not None and token.nesting >= 0:
            block = Block(token.map[0], token.map[1])
            if token.type == "heading_open":
                block.heading_level = int(token.tag[1])
                block.heading_text = heading_plain_text(tokens[index + 1])
                if block.heading_level == 1 and result.first_h1 is None:
                    result.first_h1 = block.heading_text
            block.hidden = _hidden(tokens, index)
            result.blocks.append(block)
        index += 1
    result.tags = list(tags)
    result.link_keys = list(links)
    return result


def _hidden(tokens: list[Token], index: int) -> bool:
    """A top-level block that holds no text a reader sees or searches for: HTML comments (template guidance
    such as a KEP's, ``<!-- toc -->`` markers) and empty elements (link targets), a rule (``---``), or a list
    of in-page links only (a table of contents, which names every heading and so matched any query with
    heading words)."""
    token = tokens[index]
    if token.type == "hr":
        return True
    if token.type == "html_block":
        return bool(_COMMENTS_ONLY.fullmatch(token.content))
    if token.type == "paragraph_open":  # `<span id="x"></span>` on its own line is inline HTML in a paragraph
        return bool(_COMMENTS_ONLY.fullmatch(tokens[index + 1].content))
    if token.type not in ("bullet_list_open", "ordered_list_open"):
        return False
    inlines = []
    for inner in tokens[index + 1 :]:
        if inner.level == 0:  # the list's closing token
            break
        if inner.type == "inline":
            inlines.append(inner.content)
        elif inner.type not in _LIST_STRUCTURE:  # a code block, a table, HTML inside an item: content
            return False
    return bool(inlines) and all(_ANCHOR_LINKS_ONLY.fullmatch(text) for text in inlines)


def code_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, length of its backtick runs) of each inline code span, paired as CommonMark pairs them: a
    run of backticks opens, the next run of the same length closes, a run with no partner is text. One pass
    over the runs: a pattern reread the rest of the text from every run without a partner."""
    runs = [match.span() for match in _BACKTICK_RUN.finditer(text)]
    partner: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}  # run length -> index of the nearest such run to the right
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        partner[index] = last.get(length)
        last[length] = index
    spans = []
    index = 0
    while index < len(runs):
        closer = partner[index]
        if closer is None:
            index += 1
            continue
        spans.append((runs[index][0], runs[closer][1], runs[index][1] - runs[index][0]))
        index = closer + 1
    return spans


def without_code_spans(text: str) -> str:
    """The text with each inline code span replaced by a space."""
    parts, position = [], 0
    for start, end, _length in code_spans(text):
        parts += [text[position:start], " "]
        position = end
    return "".join(parts) + text[position:]


def _scan_inline(token: Token, relpath: str, tags: dict[str, None], links: dict[str, None]) -> None:
    text = token.content
    if "`" in text:
        text = without_code_spans(text)
    if "](" in text:
        for match in _MARKDOWN_LINK.finditer(text):
            _add_markdown_link(match.group(1), relpath, links)
        text = _MARKDOWN_LINK.sub(lambda m: m.group(0)[: m.group(0).index("](")], text)
    _scan_text(text, relpath, tags, links)


def _scan_text(text: str, relpath: str, tags: dict[str, None], links: dict[str, None]) -> None:
    if "#" in text:
        for match in _INLINE_TAG.finditer(text):
            tags[match.group(1).lower().rstrip("/-")] = None
    if "[[" in text:
        for match in _WIKI_LINK.finditer(text):
            for key in reference_keys(match.group(1), relpath):
                links[key] = None


def _add_markdown_link(href: str, relpath: str, links: dict[str, None]) -> None:
    if not href or href.startswith("#") or _URL_SCHEME.match(href):
        return
    target = unquote(href.split("#", 1)[0].split("?", 1)[0])
    if not target.lower().endswith(MARKDOWN_SUFFIXES):
        return
    resolved = resolve_relative(target, relpath)
    if resolved:
        links[path_key(resolved)] = None
