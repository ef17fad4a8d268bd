"""Re-ranking providers: a cross-encoder scores query-text pairs for the rerank stage (rank/rerank.py).

Two rankers: ``tei`` (a Text Embeddings Inference server running a re-ranker: POST /rerank) and
``cohere`` (the Cohere SDK's rerank, so Cohere itself and any Cohere-compatible endpoint work).
A ranker that fails, answers late or answers nonsense never loses hits: the caller keeps the
fused order and reports why.
"""

from __future__ import annotations

from typing import Any

from autodoc_core.errors import invalid_params, whole_number
from autodoc_core.providers.base import (
    Meter,
    bearer,
    check_provider_config,
    check_seconds,
    check_url,
    cohere_api_error,
    cohere_client,
    tei_batch_limit,
    tei_info,
)
from autodoc_core.providers.http import ProviderError, post_json, with_retries

RANKER_PROVIDERS = ("tei", "cohere", "none")
RANKER_KEYS = {"provider", "url", "model", "window", "api_key_env", "timeout"}
DEFAULT_WINDOW = 40
WINDOW_RANGE = (10, 100)
DEFAULT_TIMEOUT = 5.0
# Cross-encoders read 512 tokens of query and text together; 8,000 characters is well past that, and
# keeps a window of 100 huge sections far under TEI's 2,000,000-byte payload limit.
MAX_TEXT_CHARS = 8000


class Ranker:
    provider = "base"

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.model = str(config.get("model") or "")
        self.window = int(config.get("window", DEFAULT_WINDOW))
        self.timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
        self.meter = Meter()

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model or None, "window": self.window,
                "calls": self.meter.as_dict()}

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """One score per text, in input order. Raises ProviderError."""
        with self.meter.measure(len(texts)):
            return self._scores(query, texts)

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        raise NotImplementedError


def scores_from_pairs(pairs: Any, count: int, score_key: str) -> list[float]:
    """``[{"index": i, score_key: s}, ...]`` -> scores in input order; every index exactly once."""
    if not isinstance(pairs, list) or len(pairs) != count:
        raise ProviderError(f"the ranker returned {len(pairs) if isinstance(pairs, list) else 'no'} scores "
                            f"for {count} texts")
    scores: list[float | None] = [None] * count
    for item in pairs:
        try:
            index, score = item["index"], float(item[score_key])
        except (KeyError, TypeError, ValueError):
            raise ProviderError(f"the ranker's answer lacks index/{score_key}") from None
        if not isinstance(index, int) or not 0 <= index < count or scores[index] is not None:
            raise ProviderError(f"the ranker returned an impossible index {index!r} for {count} texts")
        if score != score:
            raise ProviderError("the ranker returned a NaN score")
        scores[index] = score
    return [s for s in scores if s is not None]


class TeiRanker(Ranker):
    """TEI: POST /rerank {"query", "texts", "raw_scores", "truncate"} -> [{"index", "score"}]."""

    provider = "tei"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.url = check_url(config, "ranker")
        self.batch_limit: int | None = None  # from /info, read once with the model's name

    def _read_info(self) -> int:
        """The server's batch limit (and the model's name when not configured), from /info, once. A
        configured model does without /info (a proxy may not pass it): then TEI's default limit."""
        if self.batch_limit is None:
            try:
                info = tei_info(self.url, self.timeout, bearer(self.config), retries=0)
            except ProviderError:
                if not self.model:
                    raise
                info = {}
            self.model = self.model or str(info.get("model_id") or "unknown")
            self.batch_limit = tei_batch_limit(info)
        return self.batch_limit

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        """The window in requests of at most the server's batch limit (a stock TEI takes 32 texts, the
        default window is 40); each text cut to what the model can read anyway, so no request nears the
        server's payload limit."""
        limit = self._read_info()
        texts = [text[:MAX_TEXT_CHARS] for text in texts]
        scores: list[float] = []
        for start in range(0, len(texts), limit):
            part = texts[start : start + limit]
            body = {"query": query, "texts": part, "raw_scores": False, "truncate": True}
            answer = with_retries(lambda body=body: post_json(f"{self.url}/rerank", body, self.timeout,
                                                              bearer(self.config)), retries=1)
            scores.extend(scores_from_pairs(answer, len(part), "score"))
        return scores


class CohereRanker(Ranker):
    """The cohere SDK: ClientV2(base_url=..., api_key=...).rerank(model, query, documents, top_n)."""

    provider = "cohere"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self._client = None

    def _client_for_call(self) -> Any:
        if self._client is None:
            self._client = cohere_client(self.config, self.timeout, retries=1)
        return self._client

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        import cohere
        import httpx

        client = self._client_for_call()
        try:
            answer = client.rerank(model=self.model, query=query, documents=texts, top_n=len(texts))
        except cohere.core.api_error.ApiError as exc:
            raise cohere_api_error("rerank", exc, self.config) from None
        except httpx.TimeoutException:
            raise ProviderError(f"timeout after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ProviderError(f"cannot reach the cohere endpoint ({type(exc).__name__})") from None
        except Exception as exc:  # the SDK raises pydantic and JSON errors on malformed answers
            raise ProviderError(f"malformed cohere rerank answer ({type(exc).__name__})") from None
        pairs = [{"index": r.index, "relevance_score": r.relevance_score} for r in answer.results]
        return scores_from_pairs(pairs, len(texts), "relevance_score")


def validate_ranker(value: Any) -> dict[str, Any]:
    value = check_provider_config(value, "ranker", RANKER_KEYS, RANKER_PROVIDERS,
                                  '{"provider": "tei", "url": ...}')
    if value is None:
        return {"provider": "none"}
    provider = value["provider"]
    window = value.get("window", DEFAULT_WINDOW)
    if not whole_number(window, *WINDOW_RANGE):
        raise invalid_params(f"ranker 'window' must be an integer from {WINDOW_RANGE[0]} to {WINDOW_RANGE[1]}, "
                             f"got {window!r}")
    if provider == "tei":
        check_url(value, "ranker")
    if provider == "cohere" and not value.get("model"):
        raise invalid_params("the cohere ranker needs 'model'")
    check_seconds(value, "ranker", "timeout", 120)
    return dict(value)


def make_ranker(config: dict[str, Any]) -> Ranker | None:
    provider = config.get("provider", "none")
    if provider == "none":
        return None
    return {"tei": TeiRanker, "cohere": CohereRanker}[provider](config)
