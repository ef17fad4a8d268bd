"""Heading-scoped chunks with exact byte and line spans.

A section runs from a heading to the next heading of any level. A section within the token
budget is one chunk; a larger one is split between top-level blocks (paragraphs, lists, code
fences and tables are not cut up to ``WHOLE_BLOCK_BUDGETS`` budgets; a larger block is cut between
lines), and every part keeps the section's breadcrumb. HTML comments, empty anchors, rules and tables of
contents are left out of the text, and a section (or part) that held only those is no chunk.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from autodoc_core.parse.markdown import Block

BREADCRUMB_SEPARATOR = " › "
DEFAULT_SECTION_TOKENS = 350
# A block up to this many budgets stays whole (a code fence or table reads best in one piece); a larger one
# (a generated reference without a blank line) is cut: whole, the model would read only its beginning, and a
# hit on it would give a reader no place to look.
WHOLE_BLOCK_BUDGETS = 4


@dataclass
class Chunk:
    kind: str  # "section" | "abstract"
    breadcrumb: str
    body: str
    byte_start: int
    byte_end: int
    line_start: int  # 1-based, inclusive
    line_end: int  # 1-based, inclusive
    text_hash: str
    symbols: list[tuple[str, int]] = field(default_factory=list)  # (identifier, weight), see symbols.py

    @property
    def indexed_text(self) -> str:
        """What the lexical index reads and the embedder embeds: breadcrumb, then body."""
        return f"{self.breadcrumb}\n{self.body}" if self.body else self.breadcrumb


def estimate_tokens(text: str) -> int:
    return len(text) // 4 + 1


def text_hash(breadcrumb: str, body: str) -> str:
    return hashlib.blake2b(f"{breadcrumb}\n{body}".encode("utf-8", "replace"), digest_size=16).hexdigest()


class LineTable:
    """Byte offsets of every line of the raw file, so spans stay exact whatever the encoding."""

    def __init__(self, raw: bytes) -> None:
        self.starts = [0]
        self.ends = []
        position = raw.find(b"\n")
        while position != -1:
            self.ends.append(position - 1 if position > 0 and raw[position - 1] == 13 else position)
            self.starts.append(position + 1)
            position = raw.find(b"\n", position + 1)
        self.ends.append(len(raw))

    def __len__(self) -> int:
        return len(self.starts)

    @property
    def line_count(self) -> int:
        """Lines as an editor counts them: a final newline ends the last line, it does not start another
        (the table keeps that empty tail so spans can end at the file's end). At least 1."""
        phantom = len(self.starts) > 1 and self.starts[-1] == self.ends[-1]
        return max(1, len(self.starts) - phantom)


def make_chunk(kind: str, breadcrumb: str, body: str, first: int, last: int, table: LineTable) -> Chunk:
    """``first``/``last``: 0-based inclusive line numbers of the span in the file."""
    return Chunk(
        kind=kind,
        breadcrumb=breadcrumb,
        body=body,
        byte_start=table.starts[first],
        byte_end=table.ends[last],
        line_start=first + 1,
        line_end=last + 1,
        text_hash=text_hash(breadcrumb, body),
    )


@dataclass
class _Section:
    breadcrumb: str
    heading: Block | None
    blocks: list[Block]


def _sections(blocks: list[Block], title: str) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[Block] = []
    current: _Section | None = None
    for block in blocks:
        if block.heading_level:
            while stack and stack[-1].heading_level >= block.heading_level:
                stack.pop()
            stack.append(block)
            names = [b.heading_text for b in stack]
            if stack[0].heading_level != 1 and title and title != names[0]:
                names.insert(0, title)
            current = _Section(BREADCRUMB_SEPARATOR.join(n for n in names if n) or title, block, [])
            sections.append(current)
        else:
            if current is None:
                current = _Section(title, None, [])
                sections.append(current)
            current.blocks.append(block)
    return sections


def _last_content_line(lines: list[str], start: int, end: int) -> int:
    last = end - 1
    while last > start and not lines[last].strip():
        last -= 1
    return last


def _text(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start:end]).strip()


def _shown_text(lines: list[str], start: int, end: int, blocks: list[Block]) -> str:
    """The lines start..end without those of hidden blocks (comments, a table of contents); exactly
    ``_text`` when there are none, so a section without them keeps its text and its vector."""
    hidden = [b for b in blocks if b.hidden]
    if not hidden:
        return _text(lines, start, end)
    skipped = {number for b in hidden for number in range(b.start, b.end)}
    return "\n".join(line for number, line in enumerate(lines[start:end], start) if number not in skipped).strip()


def _cut_oversized(blocks: list[Block], lines: list[str], budget: int) -> list[Block]:
    """The blocks, each over ``WHOLE_BLOCK_BUDGETS`` budgets cut between lines into parts of about one
    budget (a line longer than that stays whole)."""
    cut: list[Block] = []
    for block in blocks:
        if block.hidden or estimate_tokens(_text(lines, block.start, block.end)) <= WHOLE_BLOCK_BUDGETS * budget:
            cut.append(block)
            continue
        start, used = block.start, 0
        for number in range(block.start, block.end):
            cost = estimate_tokens(lines[number])
            if used and used + cost > budget:
                cut.append(Block(start, number))
                start, used = number, 0
            used += cost
        cut.append(Block(start, block.end))
    return cut


def section_chunks(lines: list[str], table: LineTable, blocks: list[Block], title: str, budget: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    hidden_only: list[Chunk] = []
    sections = _sections(blocks, title)
    for position, section in enumerate(sections):
        following = sections[position + 1] if position + 1 < len(sections) else None
        parent_only = following and following.breadcrumb.startswith(section.breadcrumb + BREADCRUMB_SEPARATOR)
        if not section.blocks and parent_only:
            continue  # a heading with nothing but subsections: its children carry it in their breadcrumbs
        head_tokens = estimate_tokens(section.breadcrumb)
        parts: list[list[Block]] = []
        current: list[Block] = []
        used = head_tokens
        for block in _cut_oversized(section.blocks, lines, budget):
            cost = 0 if block.hidden else estimate_tokens(_text(lines, block.start, block.end))
            if current and used + cost > budget:
                parts.append(current)
                current, used = [], head_tokens
            current.append(block)
            used += cost
        parts.append(current)
        for number, part in enumerate(parts):
            if number == 0 and section.heading is not None:
                first = section.heading.start
                body_start = section.heading.end
            elif part:
                first = body_start = part[0].start
            else:
                continue
            end = part[-1].end if part else section.heading.end  # type: ignore[union-attr]
            last = _last_content_line(lines, first, end)
            body = _shown_text(lines, body_start, end, part) if part else ""
            chunk = make_chunk("section", section.breadcrumb, body, first, last, table)
            if part and (all(block.hidden for block in part) or not body):
                # Only comments or a table of contents (a KEP's template guidance, `<!-- toc -->`), or the blank
                # lines a cut block ends with: nothing to land on, and the short text outranked every section
                # with text for the heading's words.
                hidden_only = hidden_only or [chunk]
                continue
            chunks.append(chunk)
    return chunks or hidden_only  # a document of nothing else keeps its first, to be found by its title


_TOP_LEVEL_KEY = re.compile(r"^[^\s#-][^:]*:")


def abstract_chunk(lines: list[str], table: LineTable, frontmatter_lines: int, title: str, abstract: str) -> Chunk:
    """A chunk for the frontmatter ``abstract`` field, spanning that field's lines."""
    first, last = 0, max(frontmatter_lines - 1, 0)
    for number in range(1, frontmatter_lines - 1):
        if re.match(r"^abstract\s*:", lines[number]):
            first = last = number
            while last + 1 < frontmatter_lines - 1 and not _TOP_LEVEL_KEY.match(lines[last + 1]):
                last += 1
            break
    breadcrumb = f"{title}{BREADCRUMB_SEPARATOR}Abstract" if title else "Abstract"
    return make_chunk("abstract", breadcrumb, abstract.strip(), first, last, table)
