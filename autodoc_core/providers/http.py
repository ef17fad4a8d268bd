"""A small JSON-over-HTTP client for model servers: timeouts, bounded retries with backoff, and
errors that say what the server said (never the API key)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

RETRYABLE_STATUS = {408, 429, 500, 502, 503, 504}


class ProviderError(Exception):
    """A model server did not give a usable answer. ``reason`` is safe to show and log."""

    def __init__(self, reason: str, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retryable = retryable


T = TypeVar("T")


def post_json(url: str, body: Any, timeout: float, headers: dict[str, str] | None = None) -> Any:
    return request_json("POST", url, body, timeout, headers)


def request_json(method: str, url: str, body: Any, timeout: float, headers: dict[str, str] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = response.read()
    except urllib.error.HTTPError as exc:
        detail = without_secrets(_error_detail(exc.read()), headers or {})
        raise ProviderError(
            f"{url} answered HTTP {exc.code}{': ' + detail if detail else ''}",
            status=exc.code,
            retryable=exc.code in RETRYABLE_STATUS,
        ) from None
    except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            raise ProviderError(f"timeout after {timeout:g} s calling {url}", retryable=True) from None
        raise ProviderError(f"cannot reach {url}: {reason}", retryable=True) from None
    except http.client.HTTPException as exc:  # cut off mid-answer, not HTTP at all (a TLS port), a bad port
        raise ProviderError(f"no usable HTTP answer from {url} ({type(exc).__name__})", retryable=True) from None
    except ValueError as exc:  # urllib's word for a URL it cannot use
        raise ProviderError(f"cannot call {url}: {exc}") from None
    try:
        return json.loads(payload)
    except ValueError:
        raise ProviderError(f"{url} answered with malformed JSON ({len(payload)} bytes)") from None


def _error_detail(payload: bytes) -> str:
    try:
        data = json.loads(payload)
    except ValueError:
        return payload[:200].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        error = data.get("error", data.get("message"))
        if isinstance(error, dict):
            error = error.get("message")
        if error:
            return str(error)[:300]
    return ""


def without_secrets(text: str, headers: dict[str, str]) -> str:
    """A server may echo the credentials it rejected: never pass them on to errors and logs."""
    for value in headers.values():
        for secret in {value, value.removeprefix("Bearer ").strip()}:
            if len(secret) >= 8:
                text = text.replace(secret, "[redacted]")
    return text


def with_retries(call: Callable[[], T], retries: int, backoff: float = 0.5) -> T:
    """Run ``call()``; retry a retryable ProviderError up to ``retries`` times, doubling the wait."""
    attempt = 0
    while True:
        try:
            return call()
        except ProviderError as exc:
            if not exc.retryable or attempt >= retries:
                raise
            time.sleep(backoff * (2**attempt))
            attempt += 1
