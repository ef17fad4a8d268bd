"""How ``autodoc mcp --http`` is set up: the address it listens on, the token, the limits; and the rule that a
port beyond loopback needs a token, checked before anything binds. No web stack is imported here: the CLI
builds its help from these defaults."""

from __future__ import annotations

import ipaddress
import os
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


def read_token(token_file: str | None) -> str | None:
    """The token from ``--token-file`` (its first line), else from ``$AUTODOC_MCP_TOKEN``, else None."""
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeError) as exc:
            raise SetupError(f"cannot read the token file {token_file}: {exc}") from None
        where = f"the token file {token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        if not token:
            return None
        where = f"${TOKEN_ENV}"
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() for ch in token):
        raise SetupError(f"{where} holds no usable token: it needs at least {MIN_TOKEN_CHARS} characters and no "
                         "spaces (make one with: openssl rand -hex 32)")
    return token


def refuse_open_port(address: Address, token: str | None) -> None:
    if token is None and not address.loopback:
        raise SetupError(
            f"refusing to listen on {address.url_host}:{address.port} without a token: a port beyond loopback lets "
            f"anyone who reaches it read the knowledge base. Give --token-file FILE (or set ${TOKEN_ENV}), or "
            "listen on 127.0.0.1")


@dataclass(frozen=True)
class HttpOptions:
    address: Address
    token: str | None = None
    allow_origins: list[str] = field(default_factory=list)
    allow_hosts: list[str] = field(default_factory=list)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    request_seconds: float = DEFAULT_REQUEST_SECONDS
