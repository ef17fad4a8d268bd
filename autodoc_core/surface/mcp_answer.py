"""What an MCP search or related answer holds besides the engine's hits: each hit's text, read from its file
within a token budget shared by all of them, and notes an agent would not guess from the hits; a workspace's
summary for the workspaces tool."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from autodoc_core.errors import AutodocError
from autodoc_core.search.stages import Stage

if TYPE_CHECKING:
    from autodoc_core.rank.hits import Hit
    from autodoc_core.search.answer import SearchAnswer
    from autodoc_core.service.engine import Engine


CUT_MARK = " …"


def line_tokens(line: str) -> int:
    """About four characters a token, the estimate the chunker sizes sections with (+1 for the line break)."""
    return len(line) // 4 + 1


class Budget:
    """Tokens left for texts; hands out whole lines, except a first line longer than what is left."""

    def __init__(self, tokens: int, cut_long_lines: bool = False) -> None:
        self.total = tokens
        self.left = tokens
        self.trimmed = False
        self.cut_long_lines = cut_long_lines  # read pages through a file; a search shares the budget
        self.line_cut = False  # the last take gave its first line only in part

    def take(self, lines: list[str]) -> list[str]:
        """The longest leading run of ``lines`` that fits. For read, when not even the first line fits (a
        line of base64, a minified table), that line's start fills what is left, so a reader paging with
        next_line moves past it instead of asking for it again and again. A search keeps what is left for
        the next hits instead."""
        kept: list[str] = []
        self.line_cut = False
        for line in lines:
            cost = line_tokens(line)
            if cost > self.left:
                self.trimmed = True
                if self.cut_long_lines and not kept and self.left > 0:
                    kept.append(line[: (self.left - 1) * 4] + CUT_MARK)
                    self.left, self.line_cut = 0, True
                break
            self.left -= cost
            kept.append(line)
        return kept

    @property
    def used(self) -> int:
        return self.total - self.left


GONE_FILE = ("the file is gone (deleted, or its workspace's folder is): these lines are the index's copy of the "
             "section, as it was when indexed")
STALE_FILE = ("the file changed since it was indexed: these lines may not be the section any more; read the "
              "file, or search again in a few seconds (the server re-indexes changed files; started with "
              "--scan-seconds 0 it does not, and the index tool or `autodoc --call workspace.index` does)")


class FileLines:
    """The hits' files, each read once per search through the engine (so inside the root only), all of them
    in one call before the first hit's text is taken."""

    def __init__(self, engine: Engine, workspace: str, hits: list[Hit]) -> None:
        paths = [hit.path for hit in hits if hit.kind != "document"]  # a listed document shows no text
        try:
            self.files = engine.doc_texts(workspace, paths) if paths else {}
        except AutodocError as exc:  # the workspace was removed since the search
            self.files = dict.fromkeys(paths, exc.reason)

    def section(self, path: str, first: int, last: int) -> tuple[list[str], str | None]:
        """The lines first..last, and what went wrong when not all of them could be read, or when the file
        changed since it was indexed (the lines may no longer be the hit's section) or is gone (they are the
        index's copy)."""
        from autodoc_core.service.documents import GONE_TEXT  # the engine's modules: loaded once it is open

        read = self.files[path]
        if isinstance(read, str):
            return [], read
        lines = read.lines
        changed = GONE_FILE if read.source == GONE_TEXT else STALE_FILE if read.changed_since_indexed else None
        wanted = lines[first - 1 : last]
        if len(wanted) < last - first + 1:
            return wanted, "the file is shorter than when it was indexed; re-index it"
        return wanted, changed


def hit_with_text(rank: int, hit: Hit, files: FileLines, budget: Budget) -> dict[str, Any]:
    first, last = hit.line_start, hit.line_end
    # A facet-only query lists whole documents: their text (frontmatter first) spent the budget of the list.
    lines, problem = files.section(hit.path, first, last) if hit.kind != "document" else ([], None)
    kept = budget.take(lines)
    shaped = {
        "rank": rank, "workspace": hit.workspace, "path": hit.path, "title": hit.title, "breadcrumb": hit.breadcrumb,
        "kind": hit.kind, "line_start": first, "line_end": last, "relevance": hit.relevance,
        "via": [str(v) for v in hit.via], "superseded_by": hit.superseded_by, "text": "\n".join(kept),
        "text_line_end": first + len(kept) - 1,
        # the span's lines, all (a gone file's from the index's copy: reading it again gives the same)
        "text_complete": problem in (None, STALE_FILE, GONE_FILE) and len(kept) == len(lines),
    }
    if problem:
        shaped["text_problem"] = problem
    return shaped


def shortened(text: str, most: int = 300) -> str:
    """A query as echoed back: a pasted log of 20,000 characters came back twice in full."""
    return text if len(text) <= most else text[: most - 1] + "…"


FILLING_STATES = ("partial", "switching")


def filling(engine: Engine, answer: SearchAnswer) -> dict[str, Any]:
    """While the vectors fill, how far they reach (``{"embedding": {"embedded", "total"}}``, over the workspaces
    searched that fill, named when several were searched, and ``paused`` while embedding.pause holds them): a
    search by meaning cannot find what has no vector yet, and an agent that is not told takes a miss for an
    answer."""
    searched = answer.workspaces or {}
    names = [name for name, state in searched.items() if state.get("semantic") in FILLING_STATES]
    if not names:  # a workspace of several with no model makes the answer's own state "off"
        return {}
    counts = [engine.embedding_counts(name) for name in names]
    embedding: dict[str, Any] = {"embedded": sum(c[0] for c in counts), "total": sum(c[1] for c in counts)}
    if len(searched) > 1:
        embedding["workspaces"] = names
    if switching := [name for name in names if searched[name].get("semantic") == "switching"]:
        embedding["switching"] = switching  # a new model fills there: its search by meaning is off meanwhile
    if engine.embedding_paused():
        embedding["paused"] = True
    return {"embedding": embedding}


def query_notes(answer: SearchAnswer) -> list[str]:
    """What the engine did with the query that an agent would not guess from the hits: a facet value or a
    path that matches nothing, common words left out of the word search, hits found by meaning alone."""
    notes = list(answer.query.problems)
    if common_terms := answer.report.query_info.common_terms_left_out:
        common = ", ".join(common_terms)
        notes.append(f"words in over 30% of the sections, left out of the any-word search: {common}")
    if by_meaning_only(answer):
        notes.append(BY_MEANING_ONLY)
    return notes


BY_MEANING_ONLY = ("no section holds any of the query's words: every hit was found by meaning alone, and the "
                   "semantic stage returns the nearest sections whether or not they are related (their relevance "
                   "is relative to each other, not a confidence)")


def by_meaning_only(answer: SearchAnswer) -> bool:
    """The word search ran, and every hit came from the semantic stage alone."""
    return bool(answer.hits) and Stage.LEXICAL in answer.performed and \
        all(tuple(hit.via) == (Stage.SEMANTIC,) for hit in answer.hits)


def workspace_summary(status: dict[str, Any]) -> dict[str, Any]:
    embedder = status.get("embedder")
    embedding = None
    if embedder:
        progress = embedder.get("progress") or {}
        embedding = {"provider": embedder["provider"], "model": embedder["model"], "embedded": embedder["embedded"],
                     "total": embedder["total"], "rate": progress.get("rate"),
                     "eta_seconds": progress.get("eta_seconds"), "error": progress.get("error")}
    return {
        "name": status["name"], "root": status["root"], "documents": status["documents"],
        "chunks": status["chunks"], "indexed_at": status["indexed_at"], "semantic": status["semantic"],
        "embedding": embedding, "problems": len(status["problems"]), "facets": facet_fields(status["schema"]),
        "root_missing": not os.path.isdir(status["root"]),
    }


def facet_fields(schema: dict[str, Any]) -> dict[str, str]:
    """The fields a query can filter on (``field:value``), with their type: the built-in tag, the schema's
    common fields, and each document type's own (``type`` becomes a field when types are declared)."""
    fields = {"tag": "list", **schema["common"]}
    if schema["types"]:
        fields.setdefault("type", "string")
    for type_name, declared in schema["types"].items():
        for name, kind in declared.items():
            fields.setdefault(name, f"{kind} (type {type_name})")
    return fields
