"""Plain-text renderings of the MCP tools' results, for clients that show only text."""

from __future__ import annotations

from typing import Any


def _stages_line(stages: dict[str, Any], semantic: str, by_workspace: dict[str, str | None] | None = None) -> str:
    parts = [f"{', '.join(stages['performed']) or 'nothing'} ran"]
    parts += [f"{stage} skipped: {why}" for stage, why in stages["skipped"].items()]
    return f"Stages: {'; '.join(parts)}. Semantic index: {_states(semantic, by_workspace)}."


def _states(semantic: str, by_workspace: dict[str, str | None] | None) -> str:
    """The semantic state, or each one with its workspaces when the workspaces searched differ ("ready in adr,
    notes; off in techdocs"): the least ready alone read "off" where four of five workspaces searched by meaning."""
    if not by_workspace:
        return semantic
    names: dict[str, list[str]] = {}
    for name, state in by_workspace.items():
        names.setdefault(state or "not searched", []).append(name)
    return "; ".join(f"{state} in {', '.join(found)}" for state, found in names.items())


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def filling_line(result: dict[str, Any]) -> list[str]:
    """While the vectors fill, the first thing the model reads: a search by meaning cannot find a section that has
    no vector yet, so a miss is not an answer."""
    embedding = result.get("embedding")
    if not embedding:
        return []
    of = f" of {', '.join(embedding['workspaces'])}" if embedding.get("workspaces") else ""
    so_far = f"{embedding['embedded']} of {embedding['total']} sections{of} so far"
    state = "embedding is paused: embedding.resume fills on" if embedding.get("paused") else \
        "embedding is still filling"
    switching = embedding.get("switching") or []
    if switching and len(switching) == len(embedding.get("workspaces") or switching):
        covers = f"Semantic search is off while a new embedding model fills ({so_far})"
    else:
        covers = f"Semantic search covers {so_far} ({state})"
        if switching:
            covers += f"; it is off in {', '.join(switching)} while a new embedding model fills there"
    return [f"{covers}: a paraphrase may miss sections; try again later or search by words."]


def render_search(result: dict[str, Any]) -> str:
    hits = result["hits"]
    searched = result.get("workspaces") or [result["workspace"]]
    where = f"workspace {searched[0]}" if len(searched) == 1 else f"workspaces {', '.join(searched)}"
    lines = [*filling_line(result),
             f"{_count(len(hits), 'hit')} for {result['query']!r} in {where}. "
             + _stages_line(result["stages"], result["semantic"], result.get("semantic_by_workspace"))]
    lines += [f"Note: {note}." for note in result.get("notes", [])]
    for hit in hits:
        named = f"{hit['workspace']}: " if len(searched) > 1 and hit.get("workspace") else ""
        header = (f"[{hit['rank']}] {named}{hit['path']}:{hit['line_start']}-{hit['line_end']} · {hit['breadcrumb']} · "
                  f"relevance {hit['relevance']:.2f} · via {', '.join(hit['via'])}")
        if hit.get("superseded_by"):
            header += f" · superseded by {hit['superseded_by']}"
        lines += ["", header]
        if hit["text"]:
            lines.append(hit["text"])
        if hit["kind"] == "document":
            lines.append(f"(a listed document: read lines {hit['line_start']}-{hit['line_end']} with the read tool)")
        elif result["max_tokens"] == 0:  # no text was asked for: nothing was cut, but a changed file is news
            if hit.get("text_problem"):
                lines.append(f"({hit['text_problem']})")
        elif not hit["text_complete"]:
            lines.append(_rest_of(hit))
        elif hit.get("text_problem"):
            lines.append(f"({hit['text_problem']})")
    if result["trimmed"] and result["max_tokens"] > 0:
        lines += ["", f"(Section texts were trimmed to the {result['max_tokens']}-token budget, at line ends; "
                      "read the rest with the read tool or raise max_tokens.)"]
    return "\n".join(lines)


def _rest_of(hit: dict[str, Any]) -> str:
    if hit.get("text_problem"):
        return f"(text incomplete: {hit['text_problem']})"
    rest = f"read lines {hit['text_line_end'] + 1}-{hit['line_end']}"
    if not hit["text"]:
        return f"(no text: the token budget was spent; {rest})"
    return f"(text cut at line {hit['text_line_end']}; {rest} for the rest)"


def render_read(result: dict[str, Any], budget: int) -> str:
    header = f"{result['path']} lines {result['line_start']}-{result['line_end']} of {result['total_lines']}"
    if result.get("changed_since_indexed"):
        header += " (changed since it was indexed: line numbers from a search may be off)"
    if result.get("text_source"):  # the structured result says it; an agent given the text alone must read it too
        header += f" ({result['text_source']})"
    text = f"{header}\n{result['text']}"
    if result.get("line_cut"):
        text += (f"\n(line {result['line_end']} is longer than {budget} tokens: only its start is given; "
                 f"continue with line_start {result['next_line']})")
    elif result["trimmed"]:
        text += f"\n(trimmed to {budget} tokens at a line end; continue with line_start {result['next_line']})"
    return text


def render_documents(result: dict[str, Any], query: str) -> str:
    documents = result["documents"]
    what = f"matching {query!r} " if query else ""
    lines = [f"{_count(len(documents), 'document')} {what}in workspace {result['workspace']}:"]
    for doc in documents:
        aliases = f" (aliases: {', '.join(doc['aliases'])})" if doc.get("aliases") else ""
        lines.append(f"- {doc['path']} · {doc['title']}{aliases} · {doc['line_count']} lines")
    if result.get("next_offset") is not None:
        lines.append(f"(More: call again with offset {result['next_offset']}.)")
    return "\n".join(lines)


def render_workspaces(result: dict[str, Any]) -> str:
    if not result["workspaces"]:
        return ("No workspace in this database yet. Add a folder once from a shell: "
                "autodoc --call workspace.add '[\"NAME\", \"/path/to/folder\"]' (or from Neovim: "
                ":AutodocWorkspaceAdd), then index it: autodoc --call workspace.index '[\"NAME\"]'.")
    lines = []
    for ws in result["workspaces"]:
        embedding = ws["embedding"]
        progress = f" ({embedding['embedded']} of {embedding['total']} sections embedded)" if embedding else ""
        problems = f" · {_count(ws['problems'], 'file problem')}" if ws["problems"] else ""
        state = f"semantic {ws['semantic']}{progress}" if ws["indexed_at"] is not None else "not indexed yet"
        missing = " · the root folder is not there (a drive not mounted?): reads fail" if ws.get("root_missing") \
            else ""
        lines.append(f"- {ws['name']}: {ws['root']} · {_count(ws['documents'], 'document')}, "
                     f"{_count(ws['chunks'], 'section')} · {state}{problems}{missing}")
        facets = ", ".join(f"{name} ({kind})" for name, kind in ws["facets"].items())
        lines.append(f"  filter fields (field:value, -field:value in a query): {facets}")
    return "\n".join(lines)


def render_index(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{result[key]} {key}" for key in ("added", "changed", "renamed", "deleted", "unchanged"))
    text = (f"Indexed {result['workspace']} in {result['seconds']} s: {counts}, {result['skipped']} skipped. "
            f"Semantic index: {result['semantic']}.")
    return "\n".join([text, *(f"Not indexed: {item['path']}: {item['reason']}." for item in result["not_indexed"])])


# -- errors and the server -----------------------------------------------------------------------
