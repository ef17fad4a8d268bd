"""A search's options, checked: limit, folder prefixes, facets, stages and retrieval switches.

Every problem is an invalid-params error that names the option and says what it takes.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from autodoc_core.errors import AutodocError, invalid_params, whole_number
from autodoc_core.parse.frontmatter import CoercionError, FacetSchema, coerce
from autodoc_core.parse.walk import relative_to_root
from autodoc_core.retrieve.query import BUILTIN_FACETS, FacetFilter, tag_key
from autodoc_core.search.stages import Stage
from autodoc_core.store.workspace import Workspace

# The stages a caller can ask for. The symbol retriever is not one of them: it runs by itself beside the
# lexical stage, and only with it, when a query is identifier-shaped (``retrieval.symbol`` turns it off),
# and the answer's ``stages.performed`` lists it as "symbol" when it did.
STAGES = (Stage.LEXICAL, Stage.SEMANTIC, Stage.RERANK)
# The stages that find hits: a search keeps at least one of them (rerank only reorders what they found).
FINDERS = (Stage.LEXICAL, Stage.SEMANTIC)
MODES = {"lexical": [Stage.LEXICAL], "semantic": [Stage.SEMANTIC], "hybrid": list(STAGES), "auto": list(STAGES)}
DEFAULT_LIMIT = 10
MAX_LIMIT = 200
OPTION_KEYS = {"limit", "paths", "tags", "facets", "retrieval", "stages", "mode", "snippets"}
RETRIEVAL_KEYS = {"abstract_chunk", "demote_superseded", "symbol"}


@dataclass
class SearchOptions:
    limit: int
    paths: list[str]
    facets: list[FacetFilter]
    abstract_chunk: bool
    demote_superseded: bool
    stages: list[Stage]
    symbol: bool = True
    snippets: bool = True  # False: hits come without one (a list that shows none need not pay for them)


def parse_options(opts: Any, ws: Workspace, schema: FacetSchema) -> SearchOptions:
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise invalid_params("search options must be an object")
    unknown = sorted(set(opts) - OPTION_KEYS)
    if unknown:
        raise invalid_params(f"unknown search option {', '.join(unknown)}; known: {', '.join(sorted(OPTION_KEYS))}")
    opts = {key: value for key, value in opts.items() if value is not None}  # null: the default, as if not given
    limit = opts.get("limit", DEFAULT_LIMIT)
    if not whole_number(limit, 1, MAX_LIMIT):
        raise invalid_params(f"'limit' must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    retrieval = opts.get("retrieval") or {}
    if not isinstance(retrieval, dict) or set(retrieval) - RETRIEVAL_KEYS:
        raise invalid_params(f"'retrieval' takes {', '.join(sorted(RETRIEVAL_KEYS))}")
    for key, value in retrieval.items():
        if not isinstance(value, bool):
            raise invalid_params(f"'retrieval.{key}' must be true or false")
    snippets = opts.get("snippets", True)
    if not isinstance(snippets, bool):
        raise invalid_params(f"'snippets' must be true or false, got {snippets!r}")
    return SearchOptions(
        limit=limit,
        paths=_paths(opts.get("paths"), ws.root),
        facets=_option_facets(opts.get("facets"), opts.get("tags"), schema),
        abstract_chunk=retrieval.get("abstract_chunk", ws.option("abstract_chunk")),
        demote_superseded=retrieval.get("demote_superseded", ws.option("demote_superseded")),
        stages=parse_stages(opts.get("stages"), opts.get("mode")),
        symbol=retrieval.get("symbol", True),
        snippets=snippets,
    )


def _paths(value: Any, root: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise invalid_params("'paths' must be a list of folder prefixes")
    # "./adr", "docs\\", "adr//x/" name the folders the index spells "adr", "docs", "adr/x"; an absolute
    # path inside the root (as an agent that knows the file system passes it) names the same folder.
    folders = [posixpath.normpath(relative_to_root(root, p).replace("\\", "/")).strip("/") for p in value]
    return [folder for folder in folders if folder not in ("", ".")]


def _option_facets(facets: Any, tags: Any, schema: FacetSchema) -> list[FacetFilter]:
    result: list[FacetFilter] = []
    if tags is not None:
        if isinstance(tags, str):
            tags = [tags]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise invalid_params("'tags' must be a list of tag names")
        result.extend(FacetFilter("tag", tag_key(t)) for t in tags)
    if facets is None:
        return result
    if not isinstance(facets, dict):
        raise invalid_params("'facets' must be an object of field: value")
    for typed, value in facets.items():
        name = typed if not isinstance(typed, str) or typed in BUILTIN_FACETS else schema.spelled(typed)
        kind = BUILTIN_FACETS.get(name) or schema.declared(name)
        if kind is None:
            where = "in any document's frontmatter" if schema.inferred else "declared in _schema/frontmatter.yaml"
            raise invalid_params(
                f"facet field {name!r} is not {where} (fields: {', '.join(sorted(schema.field_names())) or 'none'})",
                field=name,
            )
        for item in value if isinstance(value, list) else [value]:
            try:
                coerced = coerce(item, kind) if kind != "list" else [str(item)]
            except CoercionError as exc:
                raise invalid_params(f"facet {name}: {exc}", field=name) from None
            if name in BUILTIN_FACETS:
                result.append(FacetFilter("tag", tag_key(str(coerced[0]))))
            else:
                result.append(FacetFilter(name, coerced[0]))
    return result


def parse_stages(stages: Any, mode: Any) -> list[Stage]:
    if stages is None:
        if mode is None:
            return list(STAGES)
        if not isinstance(mode, str) or mode not in MODES:  # a list or an object is unhashable
            raise invalid_params(f"'mode' must be one of {', '.join(MODES)}, got {mode!r}")
        return list(MODES[mode])
    if not isinstance(stages, list) or not all(s in STAGES for s in stages):
        raise invalid_params(f"'stages' must be a list drawn from {', '.join(STAGES)}, got {stages!r}")
    if not stages:
        return list(STAGES)
    if not any(s in stages for s in FINDERS):
        raise invalid_params(f"'stages' must include {' or '.join(FINDERS)} (rerank only reorders their hits)")
    return [s for s in STAGES if s in stages]


def wants_semantic(opts: Any) -> bool:
    """Whether a search with these options asks for the semantic stage (bad options: yes, and
    ``parse_options`` then says what is wrong)."""
    if not isinstance(opts, dict):
        return True
    try:
        return Stage.SEMANTIC in parse_stages(opts.get("stages"), opts.get("mode"))
    except AutodocError:
        return True


def lua_stage_rules() -> str:
    """The stage rules as the Lua module ``lua/autodoc/stage_rules.lua`` (the editor's toggles keep a finder on
    as ``parse_stages`` demands); tests/test_docs.py fails when that file and these constants differ."""
    def listed(names: tuple[Stage, ...]) -> str:
        return "{ " + ", ".join(f"'{name}'" for name in names) + " }"

    return ("-- Generated from autodoc_core/retrieve/options.py (lua_stage_rules): do not edit. Regenerate with\n"
            "-- python -c 'from autodoc_core.retrieve.options import lua_stage_rules; "
            "print(lua_stage_rules(), end=\"\")' > lua/autodoc/stage_rules.lua\n"
            "return {\n"
            f"  names = {listed(STAGES)}, -- the stages a search can ask for, in order\n"
            f"  finders = {listed(FINDERS)}, -- at least one stays on; the first is turned on when none is\n"
            "}\n")
