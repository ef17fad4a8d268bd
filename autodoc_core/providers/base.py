"""What embedders and rankers share: call metering, deadlines, API keys from the environment, the
checks on their configuration, TEI's ``/info`` and the Cohere SDK's client."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from autodoc_core.errors import invalid_params, number, whole_number
from autodoc_core.providers.http import ProviderError, request_json, with_retries, without_secrets

T = TypeVar("T")
_thread_role = threading.local()


def mark_background_thread() -> None:
    """This thread embeds behind interactive work (the background fill): a local model run from it
    leaves one core to the searches and the editor (``embedders.bulk_workers``)."""
    _thread_role.background = True


def in_background_thread() -> bool:
    return getattr(_thread_role, "background", False)


@dataclass
class Meter:
    """Calls to a provider, for workspace.status."""

    calls: int = 0
    texts: int = 0
    seconds: float = 0.0
    failures: int = 0
    last_error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, texts: int, seconds: float, error: str | None = None) -> None:
        with self.lock:
            self.calls += 1
            self.texts += texts
            self.seconds += seconds
            if error:
                self.failures += 1
                self.last_error = error

    @contextmanager
    def measure(self, texts: int) -> Iterator[None]:
        """Record one call of ``texts`` texts: its time, and its failure when a ProviderError escapes."""
        began = time.perf_counter()
        try:
            yield
        except ProviderError as exc:
            self.record(texts, time.perf_counter() - began, exc.reason)
            raise
        self.record(texts, time.perf_counter() - began)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "texts": self.texts, "seconds": round(self.seconds, 3),
                "failures": self.failures, "last_error": self.last_error}


class Pending(Generic[T]):
    """A call running in a daemon thread, started now and collected later with ``result``."""

    def __init__(self, call: Callable[[], T], name: str = "autodoc-provider-call") -> None:
        self.started = time.monotonic()
        self._outcome: list = []
        self._done = threading.Event()
        self.seconds = 0.0  # how long the call itself took, once done
        threading.Thread(target=self._run, args=(call,), name=name, daemon=True).start()

    def _run(self, call: Callable[[], T]) -> None:
        try:
            self._outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller in result()
            self._outcome.append((False, exc))
        self.seconds = time.monotonic() - self.started
        self._done.set()

    def result(self, deadline: float | None = None, what: str = "the provider") -> T:
        """The call's value (or its exception). With a deadline in seconds from the start, a call
        still running then raises ProviderError; it finishes in its thread, bounded by the
        provider's own timeout."""
        wait = None if deadline is None else max(0.0, deadline - (time.monotonic() - self.started))
        if not self._done.wait(wait):
            raise ProviderError(f"{what} did not answer within the {deadline:g} s deadline")
        ok, value = self._outcome[0]
        if not ok:
            raise value
        return value


def within_deadline(call: Callable[[], T], seconds: float, what: str) -> T:
    """``call()``'s result, or ProviderError once ``seconds`` have passed: a server that hangs (or
    trickles bytes past every socket timeout) cannot hold a search."""
    return Pending(call).result(seconds, what)


def check_provider_config(value: Any, what: str, known_keys: set[str], providers: tuple[str, ...],
                          example: str) -> dict[str, Any] | None:
    """The checks every provider configuration gets; None means "none" (the stage is off)."""
    if value in ("none", None):
        return None
    if not isinstance(value, dict):
        raise invalid_params(f"'{what}' must be an object like {example} or \"none\"")
    if "api_key" in value:
        raise invalid_params("API keys are never stored: name the environment variable in 'api_key_env'")
    unknown = sorted(set(value) - known_keys)
    if unknown:
        raise invalid_params(f"unknown {what} key {', '.join(unknown)}; known: {', '.join(sorted(known_keys))}")
    if value.get("provider") not in providers:
        raise invalid_params(f"{what} provider must be one of {', '.join(providers)}, got {value.get('provider')!r}")
    return value


def check_url(config: dict[str, Any], what: str) -> str:
    """The configuration's ``url``, which must be http(s); the error names the provider and its kind."""
    url = config.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise invalid_params(f"the {config.get('provider')} {what} needs 'url' (http:// or https://)")
    return url.rstrip("/")


def check_seconds(config: dict[str, Any], what: str, key: str, high: float) -> None:
    value = config.get(key)
    if key in config and not (number(value, high=high) and value > 0):
        raise invalid_params(f"{what} '{key}' must be a number of seconds from 0 to {high:g}")


def api_key(config: dict[str, Any], default_env: str | None = None) -> str | None:
    """The key from the environment variable the configuration names; keys are never stored."""
    name = config.get("api_key_env") or default_env
    return os.environ.get(name) if name else None


def bearer(config: dict[str, Any]) -> dict[str, str]:
    key = api_key(config)
    return {"Authorization": f"Bearer {key}"} if key else {}


TEI_MAX_CLIENT_BATCH = 32  # TEI's default --max-client-batch-size, when /info does not say


def tei_info(url: str, timeout: float, headers: dict[str, str], retries: int) -> dict[str, Any]:
    """``GET /info`` of a TEI server (an empty dict when the answer is not an object)."""
    info = with_retries(lambda: request_json("GET", f"{url}/info", None, timeout, headers), retries)
    return info if isinstance(info, dict) else {}


def tei_model_id(url: str, timeout: float, headers: dict[str, str], retries: int) -> str:
    """The model a TEI server runs, from ``GET /info``."""
    return str(tei_info(url, timeout, headers, retries).get("model_id") or "unknown")


def tei_batch_limit(info: dict[str, Any]) -> int:
    """How many inputs one request may carry (TEI answers 422 above it)."""
    value = info.get("max_client_batch_size")
    return value if whole_number(value, 1) else TEI_MAX_CLIENT_BATCH


def cohere_api_error(what: str, exc: Any, config: dict[str, Any]) -> ProviderError:
    """The SDK's ApiError as a ProviderError that says what the server said (its key redacted) and, when
    the key was refused, which environment variable to set."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail = str(body.get("message") or body) if isinstance(body, dict) else str(body or "")
    detail = without_secrets(detail[:300], bearer(config) | {"key": api_key(config, "CO_API_KEY") or ""})
    hint = ""
    if status in (401, 403):
        hint = f"; check the key in {config.get('api_key_env') or 'CO_API_KEY'}"
    where = f" at {config['url']}" if config.get("url") else ""
    return ProviderError(f"cohere {what}{where} answered HTTP {status}{': ' + detail if detail else ''}{hint}",
                         status=status, retryable=status in (429, 503))


def cohere_client(config: dict[str, Any], timeout: float, retries: int) -> Any:
    """A ``cohere.ClientV2`` for Cohere or a Cohere-compatible server at ``url``; the SDK loads on first use."""
    import cohere

    key = api_key(config, "CO_API_KEY")
    if not key:
        raise ProviderError(f"no API key: set the environment variable {config.get('api_key_env') or 'CO_API_KEY'}")
    options: dict[str, Any] = {"api_key": key, "timeout": timeout, "max_retries": retries}
    if config.get("url"):
        options["base_url"] = str(config["url"]).rstrip("/")
    return cohere.ClientV2(**options)
