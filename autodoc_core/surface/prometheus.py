"""The HTTP server's ``/metrics``, through the Prometheus project's own Python client (``prometheus_client``):
its counters and histogram, its text format, and its process collector (memory, CPU, open files) instead of
our hand-written exposition and a hand-read /proc. Each server has a registry of its own, so two servers in
one process (the tests) never count into each other."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

# Seconds: a lexical search answers in milliseconds, a hybrid one on a loaded CPU in tenths.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

WORKSPACE_GAUGES = (
    ("documents", "autodoc_workspace_documents", "Documents indexed."),
    ("sections", "autodoc_workspace_sections", "Sections indexed."),
    ("embedded", "autodoc_workspace_embedded_sections", "Sections with a vector of the workspace's model."),
    ("indexed_at", "autodoc_workspace_indexed_timestamp_seconds", "When the workspace was last indexed."),
)


class Scrape:
    """What is read from the index and the replication at each scrape (see mcp_http.StatusPages)."""

    def __init__(self, workspaces: list[dict[str, Any]], writer: str, ready: bool,
                 replication: dict[str, Any] | None) -> None:
        self.workspaces, self.writer, self.ready, self.replication = workspaces, writer, ready, replication


class _StateCollector(Collector):
    """The gauges read at scrape time, from the ``Scrape`` the page hands over."""

    def __init__(self) -> None:
        self.scrape: Scrape | None = None

    def collect(self) -> Iterator[Metric]:
        scrape = self.scrape
        if scrape is None:
            return
        yield _gauge("autodoc_ready", "1 once the index is open.", [([], int(scrape.ready))])
        yield _gauge("autodoc_writer_lease", "Who writes the index: this server (1) or another process (0).",
                     [([scrape.writer], int(scrape.writer == "this process"))], ["holder"])
        for key, name, help_text in WORKSPACE_GAUGES:
            yield _gauge(name, help_text, [([ws["name"]], ws[key]) for ws in scrape.workspaces
                                           if ws.get(key) is not None], ["workspace"])
        yield _gauge("autodoc_workspace_semantic_state", "The semantic index's state (1 for the current one).",
                     [([ws["name"], str(ws["semantic"])], 1) for ws in scrape.workspaces], ["workspace", "state"])
        yield _gauge("autodoc_workspace_folder_state", "The workspace folder's state: ok, gone, not a folder, "
                     "unreadable, empty (1 for the current one).",
                     [([ws["name"], ws["folder"]], 1) for ws in scrape.workspaces if ws.get("folder") is not None],
                     ["workspace", "state"])
        yield from _replication_families(scrape.replication)


def _gauge(name: str, help_text: str, samples: list[tuple[list[str], float]],
           labels: list[str] | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help_text, labels=labels or [])
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _replication_families(replication: dict[str, Any] | None) -> Iterator[Metric]:
    if replication is None:
        return
    role = replication["role"]
    yield _gauge("autodoc_replication_role", "This server's part in replication (1 for the current one).",
                 [([role], 1)], ["role"])
    if replication.get("txid"):
        yield _gauge("autodoc_replication_txid", "The last transaction shipped (writer) or served (replica).",
                     [([], int(replication["txid"], 16))])
    yield _gauge("autodoc_replication_errors", "1 while Litestream's last attempt failed.",
                 [([], int(replication.get("last_error") is not None))])
    if role == "replica" and replication.get("lag_seconds") is not None:
        yield _gauge("autodoc_replica_lag_seconds", "Age of the oldest writer transaction this replica lacks "
                     "(0: it holds every one in the storage).", [([], replication["lag_seconds"])])


class Metrics:
    """What the server counts as it runs; the index's and replication's state is read at each scrape."""

    def __init__(self) -> None:
        disable_created_metrics()  # no `_created` sample beside every counter: nothing here reads them
        self.registry = CollectorRegistry()
        self._render_lock = threading.Lock()
        self.in_flight = 0  # read by http_guard.InFlightLimit for its bound
        self._calls = Counter("autodoc_mcp_tool_calls", "MCP tool calls by tool and outcome.", ["tool", "outcome"],
                              registry=self.registry)
        self._latency = Histogram("autodoc_mcp_tool_call_seconds", "Time from a tool call's arrival to its answer.",
                                  ["tool"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self._responses = Counter("autodoc_http_responses", "HTTP answers by status (401, 403, 413, 429: refused).",
                                  ["status"], registry=self.registry)
        Gauge("autodoc_mcp_requests_in_flight", "MCP POST requests being served now.",
              registry=self.registry).set_function(lambda: self.in_flight)
        ProcessCollector(registry=self.registry)
        self._state = _StateCollector()
        self.registry.register(self._state)

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        self._calls.labels(tool, outcome).inc()
        self._latency.labels(tool).observe(seconds)

    def observe_response(self, status: int) -> None:
        self._responses.labels(str(status)).inc()

    def render(self, scrape: Scrape) -> bytes:
        with self._render_lock:  # the collector holds one scrape at a time
            self._state.scrape = scrape
            return generate_latest(self.registry)


