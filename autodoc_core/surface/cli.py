"""``autodoc``: what a person types (search, related, status), one method for scripts, or a server.

    autodoc [--db PATH] search [@WORKSPACE...] QUERY... [--limit N] [--json]
    autodoc [--db PATH] related PATH[:LINE] [--workspace NAME] [--limit N] [--json]
    autodoc [--db PATH] status [WORKSPACE] [--problems] [--json]
    autodoc [--db PATH] --call METHOD '[JSON params]'
    autodoc [--db PATH] serve --stdio
    autodoc [--db PATH] mcp [--allow-index] [--scan-seconds N]
    autodoc [--db PATH] mcp --http HOST:PORT [--token-file FILE] [--allow-origin ORIGIN] [limits]

Each subcommand is an argparse subparser with its own options, so an option given where it means nothing
(``--allow-index`` to ``--call``) is refused, not ignored. The engine is imported where it is used, so
`autodoc mcp` answers the tool list before numpy loads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from typing import TYPE_CHECKING

from autodoc_core import __version__
from autodoc_core.errors import INVALID_PARAMS, PARSE_ERROR, AutodocError
from autodoc_core.service.scanner import DEFAULT_SCAN_SECONDS
from autodoc_core.surface.wire import to_json

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine
    from autodoc_core.surface.replication import TeamOptions

USAGE = """autodoc [--db PATH] search [@WORKSPACE...] QUERY...   (also: related, status; see below)
       autodoc [--db PATH] --call METHOD ['JSON PARAMS']
       autodoc [--db PATH] serve --stdio | mcp [--http HOST:PORT] ..."""


class _Parser(argparse.ArgumentParser):
    def format_help(self) -> str:
        from autodoc_core.surface.rpc import METHODS

        if self.prog == "autodoc":
            self.epilog = "methods for --call: " + ", ".join(METHODS)
        return super().format_help()


def _database_option(parser: argparse.ArgumentParser) -> None:
    """``--db`` before or after the subcommand; SUPPRESS keeps a subcommand's absent --db from hiding the
    top level's."""
    parser.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH",
                        help="the SQLite file; its folder must exist (default: $AUTODOC_DB when set, else "
                             "$XDG_DATA_HOME/autodoc/autodoc.db, whose folder is created)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="autodoc", usage=USAGE, description="Hybrid search over Markdown knowledge bases.")
    _database_option(parser)
    # Only for the help: a command line with --call is read by _call_parser.
    parser.add_argument("--call", metavar="METHOD", help="call one METHOD with its PARAMS (a JSON array or "
                        "object, default []) and print its JSON result; for scripts")
    parser.add_argument("--version", action="version", version=f"autodoc {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, prog="autodoc")
    _search_arguments(commands.add_parser(
        "search", usage="autodoc search [@WORKSPACE...] QUERY... [-w NAME] [-n N] [--json] [--db PATH]",
        help="search and print one hit a line: path:line, breadcrumb, relevance"))
    _related_arguments(commands.add_parser("related", help="sections of other documents related to a file, "
                                           "or to the section at one of its lines"))
    _status_arguments(commands.add_parser("status", help="each workspace: its folder, counts, semantic state"))
    serve = commands.add_parser("serve", help="JSON-RPC 2.0 on stdin/stdout, one message a line")
    _database_option(serve)
    serve.add_argument("--stdio", action="store_true", required=True, help="on stdin/stdout (the only transport)")
    _mcp_arguments(commands.add_parser("mcp", help="Model Context Protocol on stdio, or --http for many agents"))
    return parser


def _call_parser() -> argparse.ArgumentParser:
    """``--call`` alone: whatever else is given is refused by name (``unrecognized arguments: --allow-index``)."""
    parser = _Parser(prog="autodoc", usage="autodoc [--db PATH] --call METHOD ['JSON PARAMS']")
    _database_option(parser)
    parser.add_argument("--call", required=True, metavar="METHOD")
    parser.add_argument("params", nargs="?", metavar="PARAMS")
    return parser


def _search_arguments(search: argparse.ArgumentParser) -> None:
    _database_option(search)
    search.add_argument("words", nargs="+", metavar="QUERY",
                        help="the query (quoted or not); leading @name words (@a @b, @a,b, @*) or a first word "
                             "that names a workspace choose what is searched, else every workspace is")
    search.add_argument("-w", "--workspace", action="append", metavar="NAME",
                        help="search this workspace (repeatable); then every word is the query")
    _answer_options(search)


def _related_arguments(related: argparse.ArgumentParser) -> None:
    _database_option(related)
    related.add_argument("target", metavar="PATH[:LINE]", help="a file (absolute, from here, or as a hit names "
                         "it) and optionally a line of the section")
    related.add_argument("-w", "--workspace", metavar="NAME", help="the workspace that holds PATH (default: the "
                         "one whose folder holds it)")
    _answer_options(related)


def _status_arguments(status: argparse.ArgumentParser) -> None:
    _database_option(status)
    status.add_argument("workspaces", nargs="*", metavar="WORKSPACE", help="these only (default: every one)")
    status.add_argument("--json", action="store_true", help="print workspace.status answers as JSON")
    status.add_argument("--problems", action="store_true", help="list each file problem (the YAML a note's front "
                        "matter breaks, a file skipped and why) under its workspace, as path:line  kind: reason")


def _answer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--limit", type=int, default=10, metavar="N", help="at most N hits (default 10)")
    parser.add_argument("--json", action="store_true", help="print the wire answer (JSON), as --call does")


def _mcp_arguments(mcp: argparse.ArgumentParser) -> None:
    """The ``mcp`` subcommand's options (transport, tools, background scans, HTTP limits)."""
    _database_option(mcp)
    mcp.add_argument("--allow-index", action="store_true", help="also offer the index tool")
    mcp.add_argument("--scan-seconds", type=float, default=DEFAULT_SCAN_SECONDS, metavar="N",
                     help="re-index changed files every N seconds (at least 1), and when a search meets one "
                          "(default 30; 0: never)")
    _http_arguments(mcp.add_argument_group("--http (one server for many agents; see doc/mcp-http.md)"))
    _team_arguments(mcp.add_argument_group("--http for a team (replicas, every core; see doc/team.md)"))


def _http_arguments(group: argparse._ArgumentGroup) -> None:
    from autodoc_core.surface.http_options import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_SECONDS

    group.add_argument("--http", metavar="HOST:PORT", help="serve MCP over Streamable HTTP at http://HOST:PORT/mcp "
                       "instead of stdio (port 0: any free port)")
    group.add_argument("--token-file", metavar="FILE", help="the bearer tokens a request may carry, 'NAME TOKEN' a "
                       "line (or one bare token), read again when it changes (default: $AUTODOC_MCP_TOKEN); "
                       "without one the server listens on loopback only")
    group.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="a browser origin allowed besides this server's own (repeatable)")
    group.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a name clients reach the server by, besides its address and hostname (repeatable)")
    group.add_argument("--access-log", metavar="FILE", help="one line a request (time, client, token name, tool, "
                       "status, ms) to FILE, or '-' for stderr")
    group.add_argument("--access-log-queries", action="store_true", help="with --access-log: add each search's "
                       "query text")
    group.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, metavar="N",
                       help="larger requests are answered 413 (default 1 MiB)")
    group.add_argument("--max-in-flight", type=int, default=DEFAULT_MAX_IN_FLIGHT, metavar="N",
                       help="requests served at once; one more is answered 429 with Retry-After (default 64)")
    group.add_argument("--request-seconds", type=float, default=DEFAULT_REQUEST_SECONDS, metavar="S",
                       help="a tool call that takes longer is answered with an error (default 30)")


# What a shell reports for a process that SIGPIPE ended (128 + 13): `autodoc ... | head` behaves like other tools.
CLOSED_PIPE_STATUS = 128 + signal.SIGPIPE


def main(argv: list[str] | None = None) -> int:
    """Run the command; a reader that went away (`| head`, a client gone) ends it quietly with status 141."""
    try:
        return _run(argv)
    except BrokenPipeError:
        _silence_stdout()
        return CLOSED_PIPE_STATUS


def _team_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--replicate-to", metavar="URL", help="replicate the index to URL with Litestream "
                       "(file:///folder, s3://bucket/path, ...), for replicas to follow")
    group.add_argument("--replica-of", metavar="URL", help="serve a read replica of the index a writer replicates "
                       "to URL: restored into --db on the first start, then kept in step")
    group.add_argument("--workers", type=int, metavar="N",
                       help="N server processes on one port over one database (default: the number of cores)")
    group.add_argument("--worker-socket", type=int, help=argparse.SUPPRESS)  # a worker's inherited socket


def _team_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> TeamOptions:
    from autodoc_core.surface.replication import TeamOptions

    workers = args.workers if args.workers is not None else os.cpu_count() or 1
    if workers < 1:
        parser.error("--workers must be 1 or more")
    if args.replicate_to and args.replica_of:
        parser.error("--replicate-to and --replica-of exclude each other: a server is the writer or a replica")
    return TeamOptions(args.replicate_to, args.replica_of, workers, args.worker_socket)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail on the closed pipe again
    (the recipe in the Python docs, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _run(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if any(word == "--call" or word.startswith("--call=") for word in argv):
        called = _call_parser().parse_args(argv)
        return _call_once(getattr(called, "db", None), called.call, called.params)
    parser = _parser()
    args = _parse_intermixed(parser, argv)
    args.command_line = argv  # what each of --workers runs again
    db = getattr(args, "db", None)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "mcp":
        return _serve_mcp(parser, db, args)
    if args.command == "serve":
        return _serve_stdio(db)
    from autodoc_core.surface import cli_commands

    return cli_commands.run(args.command, db, args)


# The subcommands whose positional words may come before, between and after their options.
POSITIONALS_ANYWHERE = {"search": "words", "status": "workspaces"}


# A search's words that begin with '-' and name none of its options: an excluded word or facet
# (-status:superseded, -draft) or a negative number (-32069). Marked so that argparse takes them as words.
SEARCH_VALUE_OPTIONS = ("-w", "--workspace", "-n", "--limit", "--db")  # each takes the next word
SEARCH_OPTIONS = (*SEARCH_VALUE_OPTIONS, "--json", "-h", "--help")
_WORD_MARK = "\0"


def _dashed_words_marked(argv: list[str]) -> list[str]:
    """``argv`` with the search's dashed query words marked (see SEARCH_OPTIONS); other commands' as given."""
    if "search" not in argv:
        return argv
    start = argv.index("search") + 1
    taken_by_option = False
    marked = argv[:start]
    for word in argv[start:]:
        is_word = (not taken_by_option and word.startswith("-") and not word.startswith("--") and len(word) > 1
                   and word.split("=")[0] not in SEARCH_OPTIONS and not re.fullmatch(r"-n\d+", word))
        marked.append(_WORD_MARK + word if is_word else word)
        taken_by_option = word in SEARCH_VALUE_OPTIONS
    return marked


def _parse_intermixed(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed with options anywhere: argparse ends a positional list at the first option, so
    ``search @kb --json backoff`` left ``backoff`` over (parse_intermixed_args refuses subcommands). The words
    left over join the positional list they belong to, in the order given; anything else is refused. A search's
    ``-field:value`` and ``-word`` are words of its query, not options."""
    args, left = parser.parse_known_args(_dashed_words_marked(argv))
    field = POSITIONALS_ANYWHERE.get(args.command or "")
    if left and field and not any(word.startswith("-") for word in left):
        setattr(args, field, [*(getattr(args, field) or []), *left])
    elif left:
        parser.error(f"unrecognized arguments: {' '.join(left)}")
    if field and getattr(args, field, None):
        setattr(args, field, [word.removeprefix(_WORD_MARK) for word in getattr(args, field)])
    return args


def _serve_mcp(parser: argparse.ArgumentParser, db: str | None, args: argparse.Namespace) -> int:
    if args.http:
        return _serve_http(parser, db, args)
    if args.replicate_to or args.replica_of or args.workers is not None:
        parser.error("--replicate-to, --replica-of and --workers go with --http HOST:PORT")
    from autodoc_core.surface.mcp import serve

    return serve(db, allow_index=args.allow_index, scan_seconds=max(args.scan_seconds, 0.0))


def _serve_stdio(db: str | None) -> int:
    from autodoc_core.surface.rpc import serve_stdio

    engine = _engine(db)
    if engine is None:
        return 1
    try:
        serve_stdio(engine, sys.stdin.buffer, sys.stdout.buffer)
    except KeyboardInterrupt:
        pass
    finally:
        engine.close()
    return 0


def _serve_http(parser: argparse.ArgumentParser, db: str | None, args: argparse.Namespace) -> int:
    from autodoc_core.surface.http_options import HttpOptions, SetupError, parse_address, read_token, refuse_open_port
    from autodoc_core.surface.mcp_http import serve_http

    if args.max_body_bytes < 1 or args.max_in_flight < 1 or not args.request_seconds > 0:
        parser.error("--max-body-bytes, --max-in-flight and --request-seconds must be positive")
    try:
        address, tokens = parse_address(args.http), read_token(args.token_file)
        refuse_open_port(address, tokens)  # before anything binds
        options = HttpOptions(address, tokens, args.allow_origin, args.allow_host, args.max_body_bytes,
                              args.max_in_flight, args.request_seconds, args.access_log, args.access_log_queries)
        return serve_http(db, options, allow_index=args.allow_index, scan_seconds=max(args.scan_seconds, 0.0),
                          team=_team_options(parser, args), argv=args.command_line)
    except SetupError as exc:
        print(f"autodoc mcp: {exc}", file=sys.stderr)
        return 2


def _engine(db: str | None) -> Engine | None:
    from autodoc_core.service.engine import Engine

    try:
        return Engine(db)
    except AutodocError as exc:
        print(to_json(exc.to_rpc()), file=sys.stderr)
        return None


def _call_once(db: str | None, method: str, raw_params: str | None) -> int:
    try:
        params = json.loads(raw_params) if raw_params else []
    except ValueError as exc:
        _print({"error": AutodocError(PARSE_ERROR, f"params are not valid JSON: {exc}").to_rpc()})
        return 1
    if not isinstance(params, list | dict):
        _print({"error": AutodocError(INVALID_PARAMS, "params must be a JSON array or object").to_rpc()})
        return 1
    from autodoc_core.service.engine import Engine
    from autodoc_core.surface.rpc import call, error_object

    try:
        engine = Engine(db)
    except AutodocError as exc:
        _print({"error": exc.to_rpc()})
        return 1
    try:
        result, status = call(engine, method, params), 0
    except Exception as exc:
        result, status = {"error": error_object(exc)}, 1
    finally:
        engine.close()
    _print(result)
    return status


def _print(value: object) -> None:
    sys.stdout.write(to_json(value, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
