"""``autodoc``: call one method, serve JSON-RPC on stdio, or serve MCP on stdio.

    autodoc [--db PATH] --call METHOD '[JSON params]'
    autodoc [--db PATH] serve --stdio
    autodoc [--db PATH] mcp [--allow-index] [--scan-seconds N]
    autodoc [--db PATH] mcp --http HOST:PORT [--token-file FILE] [--allow-origin ORIGIN] [limits]

The engine is imported where it is used, so `autodoc mcp` answers the tool list before numpy loads.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import TYPE_CHECKING

from autodoc_core import __version__
from autodoc_core.errors import INVALID_PARAMS, PARSE_ERROR, AutodocError
from autodoc_core.service.scanner import DEFAULT_SCAN_SECONDS
from autodoc_core.surface.wire import to_json

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine


class _Parser(argparse.ArgumentParser):
    def format_help(self) -> str:
        from autodoc_core.surface.rpc import METHODS

        self.epilog = "methods: " + ", ".join(METHODS)
        return super().format_help()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="autodoc", description="Hybrid search over Markdown knowledge bases.")
    parser.add_argument("--db", help="SQLite file, in a folder that exists (default: $AUTODOC_DB, the same; "
                        "else $XDG_DATA_HOME/autodoc/autodoc.db, its folder created)")
    parser.add_argument("--call", metavar="METHOD", help="call one method and print its JSON result")
    parser.add_argument("--stdio", action="store_true", help="with 'serve': JSON-RPC 2.0 on stdin/stdout")
    parser.add_argument("--allow-index", action="store_true", help="with 'mcp': also offer the index tool")
    parser.add_argument("--scan-seconds", type=float, default=DEFAULT_SCAN_SECONDS, metavar="N",
                        help="with 'mcp': re-index changed files every N seconds (at least 1), and when a search "
                             "meets one (default 30; 0: never)")
    _http_arguments(parser.add_argument_group("mcp --http (one server for many agents; see doc/mcp-http.md)"))
    parser.add_argument("--version", action="version", version=f"autodoc {__version__}")
    parser.add_argument("words", nargs="*", metavar="PARAMS | serve | mcp",
                        help="with --call: the params as a JSON array or object; or 'serve --stdio'; or 'mcp' "
                             "(Model Context Protocol on stdin/stdout)")
    return parser


def _http_arguments(group: argparse._ArgumentGroup) -> None:
    from autodoc_core.surface.http_options import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_SECONDS

    group.add_argument("--http", metavar="HOST:PORT", help="serve MCP over Streamable HTTP at http://HOST:PORT/mcp "
                       "instead of stdio (port 0: any free port)")
    group.add_argument("--token-file", metavar="FILE", help="the bearer token every request must carry (default: "
                       "$AUTODOC_MCP_TOKEN); without one the server listens on loopback only")
    group.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="a browser origin allowed besides this server's own (repeatable)")
    group.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a name clients reach the server by, besides its address and hostname (repeatable)")
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


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail on the closed pipe again
    (the recipe in the Python docs, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _run(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.http and (args.words != ["mcp"] or args.call):
        parser.error("--http goes with 'mcp' (autodoc mcp --http HOST:PORT)")
    if args.words == ["mcp"] and not args.call and args.http:
        return _serve_http(parser, args)
    if args.words == ["mcp"] and not args.call:
        from autodoc_core.surface.mcp import serve

        return serve(args.db, allow_index=args.allow_index, scan_seconds=max(args.scan_seconds, 0.0))
    if args.words == ["serve"] and not args.call:
        if not args.stdio:
            parser.error("serve needs --stdio (the only transport)")
        from autodoc_core.surface.rpc import serve_stdio

        engine = _engine(args.db)
        if engine is None:
            return 1
        try:
            serve_stdio(engine, sys.stdin.buffer, sys.stdout.buffer)
        except KeyboardInterrupt:
            pass
        finally:
            engine.close()
        return 0
    if not args.call or len(args.words) > 1:
        parser.print_help(sys.stderr)
        return 2
    return _call_once(args.db, args.call, args.words[0] if args.words else None)


def _serve_http(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from autodoc_core.surface.http_options import HttpOptions, SetupError, parse_address, read_token, refuse_open_port
    from autodoc_core.surface.mcp_http import serve_http

    if args.max_body_bytes < 1 or args.max_in_flight < 1 or not args.request_seconds > 0:
        parser.error("--max-body-bytes, --max-in-flight and --request-seconds must be positive")
    try:
        address, token = parse_address(args.http), read_token(args.token_file)
        refuse_open_port(address, token)  # before anything binds
        options = HttpOptions(address, token, args.allow_origin, args.allow_host, args.max_body_bytes,
                              args.max_in_flight, args.request_seconds)
        return serve_http(args.db, options, allow_index=args.allow_index, scan_seconds=max(args.scan_seconds, 0.0))
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
