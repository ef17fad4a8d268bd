"""``autodoc search``, ``related`` and ``status``: the engine's answers as lines a person reads in a shell.

Hits go to stdout, one a line (``path:line  breadcrumb  relevance``; when several workspaces were searched, the
workspace first and the file as the shell opens it), so they pipe into grep, head or an editor's quickfix; what is
said about the search (no hits, a semantic stage that was skipped) goes to stderr. ``--json`` prints the wire
answer instead, as ``--call`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autodoc_core.errors import UNKNOWN_WORKSPACE, AutodocError, from_sqlite
from autodoc_core.surface.wire import to_json

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine

EVERY_WORKSPACE = "*"
PATH_COLUMN_MOST = 60  # a longer path:line pushes its own row's breadcrumb right, not every row's


def run(command: str, db: str | None, args: argparse.Namespace) -> int:
    """Run ``command`` on the engine at ``db``; an error is one sentence on stderr and status 1."""
    from autodoc_core.service.engine import Engine

    try:
        engine = Engine(db)
    except AutodocError as exc:
        return _failed(command, exc)
    try:
        return COMMANDS[command](engine, args)
    except Exception as exc:
        known = exc if isinstance(exc, AutodocError) else from_sqlite(exc)
        if known is None:
            raise
        if db is None and known.code == UNKNOWN_WORKSPACE and not _workspace_names(engine):
            known = _with_run_database(known)
        return _failed(command, known)
    finally:
        engine.close()


RUN_DATABASE = Path(".run") / "autodoc.db"  # make run's, from the project's folder


def _with_run_database(exc: AutodocError) -> AutodocError:
    """The default database is empty, and `make run`'s is here: say where that one is (a new user adds a
    workspace in the editor `make run` opened, then asks the shell, which reads another file)."""
    if not RUN_DATABASE.is_file() or "fix" in exc.data:
        return exc
    return AutodocError(exc.code, exc.reason, **{**exc.data, "fix": f"the editor of make run keeps its index in "
                                                              f"{RUN_DATABASE}: add --db {RUN_DATABASE}"})


def _failed(command: str, exc: AutodocError) -> int:
    fix = exc.data.get("fix")
    print(f"autodoc {command}: {exc.reason}" + (f" ({fix})" if fix else ""), file=sys.stderr)
    return 1


# -- search -------------------------------------------------------------------------------------------------

def search(engine: Engine, args: argparse.Namespace) -> int:
    scope, query = search_scope(args.words, args.workspace, _workspace_names(engine))
    answer = engine.search_query(scope, query, {"limit": args.limit}).to_wire()
    return _print_answer(answer, args.json, f"for {query!r}", scope, words=True)


def search_scope(words: list[str], asked: list[str] | None, known: list[str]) -> tuple[Any, str]:
    """(scope, query): ``-w`` names the workspaces; else leading ``@name`` words, as the editor's prompt takes them
    (``@a @b``, ``@a,b``, ``@*``; a name that is no workspace is the engine's error, naming the ones there are);
    else a first word that names one (with more words after it) is the workspace; else every workspace."""
    if asked:
        return (asked[0] if len(asked) == 1 else asked), " ".join(words)
    tokens = " ".join(words).split()
    named: list[str] = []
    while tokens and tokens[0].startswith("@"):
        named += [name for name in tokens.pop(0)[1:].split(",") if name]
    if named:
        scope: Any = EVERY_WORKSPACE if EVERY_WORKSPACE in named else list(dict.fromkeys(named))
        return (scope[0] if isinstance(scope, list) and len(scope) == 1 else scope), " ".join(tokens)
    if len(words) > 1 and words[0] in known:
        return words[0], " ".join(words[1:])
    return EVERY_WORKSPACE, " ".join(words)


def _workspace_names(engine: Engine) -> list[str]:
    return [ws["name"] for ws in engine.workspace_list()]


# -- related ------------------------------------------------------------------------------------------------

LINE_SUFFIX = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")


NOT_A_LINE = re.compile(r"^(?P<path>.+):(?P<line>[^:/\\]*)$")


def related(engine: Engine, args: argparse.Namespace) -> int:
    path, line = split_target(args.target)
    if line is None and (bad := NOT_A_LINE.match(path)) and not os.path.exists(path):
        print(f"autodoc related: LINE must be a number, got {bad['line']!r} in {path} (PATH:LINE, such as "
              f"{bad['path']}:12)", file=sys.stderr)
        return 2
    if os.path.exists(path):  # a file named from here; else a path as a hit names it, inside its workspace
        path = os.path.abspath(path)
    opts: dict[str, Any] = {"limit": args.limit, **({"line": line} if line is not None else {})}
    scope = args.workspace or EVERY_WORKSPACE
    try:
        answer = engine.search_related(scope, path, opts).to_wire()
    except AutodocError as exc:
        raise in_cli_terms(exc, path) from None
    return _print_answer(answer, args.json, f"related to {args.target}", scope)


def in_cli_terms(exc: AutodocError, path: str) -> AutodocError:
    """The engine's error worded for this command line: its options, not the wire's fields."""
    holding = exc.data.get("holding")
    if holding == []:
        return AutodocError(exc.code, f"no such file: {path} (not in this folder, and no workspace holds a "
                                      "document at that path)", fix="autodoc search finds a document by its words")
    if holding:
        return AutodocError(exc.code, f"{path} is in several workspaces ({', '.join(holding)})",
                            fix="choose one with -w NAME")
    if index := exc.data.get("index"):
        return AutodocError(exc.code, exc.reason, fix=f"index it: autodoc --call workspace.index "
                                                      f"'{json.dumps(index)}'; the Neovim plugin indexes a file "
                                                      "when it is saved")
    if "doc.list" in str(exc.data.get("fix")):  # a method for scripts; a person searches
        return AutodocError(exc.code, exc.reason, fix="give the path from the workspace's folder; autodoc search "
                                                      "finds a document by its words")
    return exc


def split_target(target: str) -> tuple[str, int | None]:
    """``PATH:LINE`` into its path and line; a path alone (or one whose own name ends in ``:x``) as it is."""
    if (match := LINE_SUFFIX.match(target)) and not os.path.exists(target):
        return match["path"], int(match["line"])
    return target, None


# -- status -------------------------------------------------------------------------------------------------

def status(engine: Engine, args: argparse.Namespace) -> int:
    from autodoc_core.surface.mcp_answer import workspace_summary
    from autodoc_core.surface.mcp_text import render_workspaces

    names = args.workspaces or _workspace_names(engine)
    statuses = [engine.workspace_status(name) for name in names]
    if args.json:
        print(to_json(statuses, indent=2))
        return 0
    print(render_workspaces({"workspaces": [workspace_summary(one) for one in statuses]}))
    problems = [(one, problem) for one in statuses for problem in one["problems"]]
    if args.problems:
        for one, problem in problems:
            print(problem_row(one, problem, several=len(statuses) > 1))
    elif problems:
        print(f"autodoc status --problems lists the {len(problems)} file problem{'s' if len(problems) > 1 else ''}",
              file=sys.stderr)
    return 0


PROBLEM_LINE = re.compile(r"\bline (\d+)")


def problem_line(reason: str) -> int:
    """The line a problem's reason names (``malformed YAML frontmatter at line 4: ...``), else 1."""
    return int(match[1]) if (match := PROBLEM_LINE.search(reason)) else 1


def problem_row(status: dict[str, Any], problem: dict[str, Any], several: bool) -> str:
    """``path:line  kind: reason``, the path from the workspace's folder, led by the workspace when ``several``."""
    place = f"{problem['path']}:{problem_line(problem['reason'])}  {problem['kind']}: {problem['reason']}"
    return f"{status['name']}  {place}" if several else place


COMMANDS: dict[str, Callable[[Engine, argparse.Namespace], int]] = {
    "search": search, "related": related, "status": status,
}


# -- rows ---------------------------------------------------------------------------------------------------

def _print_answer(answer: dict[str, Any], as_json: bool, what: str, scope: Any, words: bool = False) -> int:
    if as_json:
        print(to_json(answer, indent=2))
        return 0
    searched = searched_workspaces(answer, scope)
    for row in hit_rows(answer, len(searched) > 1):
        print(row)
    for line in answer_notes(answer, what, searched, words):
        print(line, file=sys.stderr)
    return 0


def hit_rows(answer: dict[str, Any], several: bool) -> list[str]:
    """One line a hit: ``path:line  breadcrumb  relevance``, the path the file as this shell opens it
    (``shell_path``), led by the hit's workspace when ``several`` were searched; the location column padded to
    the widest (up to PATH_COLUMN_MOST) so the breadcrumbs line up."""
    hits = answer["hits"]
    paths = [shell_path(hit, answer) for hit in hits]
    places = [f"{path}:{hit['line_start']}" for path, hit in zip(paths, hits, strict=True)]
    width = min(max(map(len, places), default=0), PATH_COLUMN_MOST)
    names = [hit.get("workspace") or "" for hit in hits]
    name_width = max(map(len, names), default=0)
    rows = []
    for hit, place, name in zip(hits, places, names, strict=True):
        crumb = hit.get("breadcrumb") or hit.get("title") or ""
        columns = [place.ljust(width), crumb, f"{hit['relevance']:.2f}"]
        rows.append("  ".join([name.ljust(name_width), *columns] if several else columns))
    return rows


def shell_path(hit: dict[str, Any], answer: dict[str, Any]) -> str:
    """The hit's file from the current directory: relative when it is below it, else absolute (a path relative
    to its workspace's folder opens nothing from elsewhere)."""
    root = ((answer.get("workspaces") or {}).get(hit.get("workspace")) or {}).get("root")
    if not root:
        return hit["path"]
    file = os.path.join(root, hit["path"])
    here = os.getcwd()
    return os.path.relpath(file, here) if file.startswith(here + os.sep) else file


def searched_workspaces(answer: dict[str, Any], scope: Any) -> list[str]:
    """The workspaces the answer says it searched, else the ones asked for by name."""
    if isinstance(answer.get("scope"), dict):
        return list(answer["scope"].get("workspaces") or [])
    return [scope] if isinstance(scope, str) else list(scope)


def answer_notes(answer: dict[str, Any], what: str, searched: list[str], words: bool) -> list[str]:
    """What a person should know about the list above it: nothing found, no hit with the query's ``words`` (a
    search's; a related list has none of its own), or a stage that did not run."""
    notes = list((answer.get("query") or {}).get("problems") or [])
    if not answer["hits"]:
        notes.append(f"no hits {what} in {', '.join(searched)}")
    elif words and by_meaning_only(answer):
        notes.append("no section has these words: by meaning only")
    skipped = (answer.get("stages") or {}).get("skipped", {})
    notes += [f"{stage} skipped: {why}" for stage, why in skipped.items()
              if not (stage == "rerank" and "no ranker is configured" in why)]  # the usual case: not news
    if "semantic" not in skipped and answer.get("semantic") not in (None, "ready", "off"):
        notes.append(f"semantic index: {answer['semantic']} (a search by meaning covers part of the sections)")
    return notes


def by_meaning_only(answer: dict[str, Any]) -> bool:
    """The words were looked for and no hit has them: every hit came by meaning alone (the picker's rule)."""
    performed = (answer.get("stages") or {}).get("performed") or []
    return "lexical" in performed and all(hit.get("via") == ["semantic"] for hit in answer["hits"])
