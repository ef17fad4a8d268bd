"""How ``autodoc mcp --http`` is set up: the address it listens on, the token, the limits; and the rule that a
port beyond loopback needs a token, checked before anything binds. No web stack is imported here: the CLI
builds its help from these defaults."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_MAX_IN_FLIGHT = 64
DEFAULT_REQUEST_SECONDS = 30.0

TOKEN_ENV = "AUTODOC_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class SetupError(Exception):
    """A configuration the server refuses to start with; the message says why and what to do."""


@dataclass(frozen=True)
class Address:
    host: str  # as given: an IP address or a name
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a name other than localhost may resolve anywhere

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


def parse_address(text: str) -> Address:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``:PORT`` (loopback); port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise SetupError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return Address(host, int(port))


TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,63}$")
ENV_TOKEN_NAME = "env"
SOLE_TOKEN_NAME = "token"  # a token file of one bare token (the first format)


@dataclass(frozen=True)
class Tokens:
    """The bearer tokens the server takes, each by the name the access log gives it: token -> name. From
    ``--token-file`` (``NAME TOKEN`` a line; one bare token alone is named "token") or ``$AUTODOC_MCP_TOKEN``
    (named "env"). ``file`` is where to read them again, so a name taken out of it is refused at once."""

    by_token: dict[str, str]
    file: Path | None = None


def read_token(token_file: str | None) -> Tokens | None:
    """The tokens of ``--token-file``, else ``$AUTODOC_MCP_TOKEN``'s, else None."""
    if token_file is not None:
        return read_token_file(Path(token_file))
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        return None
    return Tokens({_usable(token, f"${TOKEN_ENV}"): ENV_TOKEN_NAME})


def read_token_file(path: Path) -> Tokens:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise SetupError(f"cannot read the token file {path}: {exc}") from None
    lines = [(number, line.split()) for number, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if len(lines) == 1 and len(lines[0][1]) == 1:
        return Tokens({_usable(lines[0][1][0], f"the token file {path}"): SOLE_TOKEN_NAME}, path)
    by_token: dict[str, str] = {}
    for number, words in lines:
        where = f"the token file {path}, line {number}"
        if len(words) != 2 or not TOKEN_NAME.match(words[0]):
            raise SetupError(f"{where}: want NAME TOKEN (a name of letters, digits and _.@+-, a space, the token)")
        name, token = words
        if name in by_token.values() or token in by_token:
            raise SetupError(f"{where}: the {'name' if name in by_token.values() else 'token'} is given twice")
        by_token[_usable(token, where)] = name
    if not by_token:
        raise SetupError(f"the token file {path} holds no token (a line: NAME TOKEN)")
    return Tokens(by_token, path)


def _usable(token: str, where: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() for ch in token):
        raise SetupError(f"{where} holds no usable token: it needs at least {MIN_TOKEN_CHARS} characters and no "
                         "spaces (make one with: openssl rand -hex 32)")
    return token


def refuse_open_port(address: Address, tokens: Tokens | None) -> None:
    if tokens is None and not address.loopback:
        raise SetupError(
            f"refusing to listen on {address.url_host}:{address.port} without a token: a port beyond loopback lets "
            f"anyone who reaches it read the knowledge base. Give --token-file FILE (or set ${TOKEN_ENV}), or "
            "listen on 127.0.0.1")


@dataclass(frozen=True)
class HttpOptions:
    address: Address
    tokens: Tokens | None = None
    allow_origins: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    request_seconds: float = DEFAULT_REQUEST_SECONDS
    access_log: str | None = None  # a file, or "-" for stderr
    access_log_queries: bool = False
