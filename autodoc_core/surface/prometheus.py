"""The HTTP server's ``/metrics`` in the Prometheus text format (version 0.0.4), written by hand: a few
counters, one histogram and gauges read at scrape time need no client library."""

from __future__ import annotations

import bisect
import os
from collections import Counter
from typing import Any

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Seconds: a lexical search answers in milliseconds, a hybrid one on a loaded CPU in tenths.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: Any) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{name}="{_escape(str(value))}"' for name, value in labels.items()) + "}"


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if isinstance(value, float) else str(value)


class Histogram:
    def __init__(self) -> None:
        self.counts = [0] * len(LATENCY_BUCKETS)  # per bucket, not cumulative
        self.total = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        index = bisect.bisect_left(LATENCY_BUCKETS, seconds)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += 1
        self.sum += seconds

    def lines(self, name: str, **labels: Any) -> list[str]:
        out, running = [], 0
        for bound, count in zip(LATENCY_BUCKETS, self.counts, strict=True):
            running += count
            out.append(f"{name}_bucket{_labels(**labels, le=bound)} {running}")
        out.append(f"{name}_bucket{_labels(**labels, le='+Inf')} {self.total}")
        out.append(f"{name}_sum{_labels(**labels)} {_number(self.sum)}")
        out.append(f"{name}_count{_labels(**labels)} {self.total}")
        return out


class Metrics:
    """What the server counts as it runs; the workspaces' state is passed in at each scrape."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()  # (tool, outcome)
        self.latency: dict[str, Histogram] = {}
        self.responses: Counter[int] = Counter()  # HTTP status of every answer, refusals included
        self.in_flight = 0

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        self.calls[(tool, outcome)] += 1
        self.latency.setdefault(tool, Histogram()).observe(seconds)

    def observe_response(self, status: int) -> None:
        self.responses[status] += 1

    def render(self, workspaces: list[dict[str, Any]], writer: str, ready: bool) -> str:
        lines: list[str] = []

        def family(name: str, kind: str, help_text: str, samples: list[str]) -> None:
            lines.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples])

        family("autodoc_mcp_tool_calls_total", "counter", "MCP tool calls by tool and outcome.",
               [f"autodoc_mcp_tool_calls_total{_labels(tool=t, outcome=o)} {n}" for (t, o), n in
                sorted(self.calls.items())])
        family("autodoc_mcp_tool_call_seconds", "histogram", "Time from a tool call's arrival to its answer.",
               [line for tool, hist in sorted(self.latency.items())
                for line in hist.lines("autodoc_mcp_tool_call_seconds", tool=tool)])
        family("autodoc_http_responses_total", "counter", "HTTP answers by status (401, 403, 413, 429: refused).",
               [f"autodoc_http_responses_total{_labels(status=s)} {n}" for s, n in sorted(self.responses.items())])
        family("autodoc_mcp_requests_in_flight", "gauge", "MCP POST requests being served now.",
               [f"autodoc_mcp_requests_in_flight {self.in_flight}"])
        family("autodoc_ready", "gauge", "1 once the index is open.", [f"autodoc_ready {int(ready)}"])
        family("autodoc_writer_lease", "gauge", "Who writes the index: this server (1) or another process (0).",
               [f"autodoc_writer_lease{_labels(holder=writer)} {int(writer == 'this process')}"])
        lines.extend(_workspace_families(workspaces))
        family("process_resident_memory_bytes", "gauge", "Resident memory of the server process.",
               [f"process_resident_memory_bytes {resident_bytes()}"])
        return "\n".join(lines) + "\n"


WORKSPACE_GAUGES = (
    ("documents", "autodoc_workspace_documents", "Documents indexed."),
    ("sections", "autodoc_workspace_sections", "Sections indexed."),
    ("embedded", "autodoc_workspace_embedded_sections", "Sections with a vector of the workspace's model."),
    ("indexed_at", "autodoc_workspace_indexed_timestamp_seconds", "When the workspace was last indexed."),
)


def _workspace_families(workspaces: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for key, name, help_text in WORKSPACE_GAUGES:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{_labels(workspace=ws['name'])} {_number(ws[key])}" for ws in workspaces
                  if ws.get(key) is not None]
    lines += ["# HELP autodoc_workspace_semantic_state The semantic index's state (1 for the current one).",
              "# TYPE autodoc_workspace_semantic_state gauge"]
    lines += [f"autodoc_workspace_semantic_state{_labels(workspace=ws['name'], state=ws['semantic'])} 1"
              for ws in workspaces]
    lines += ["# HELP autodoc_workspace_folder_state The workspace folder's state: ok, gone, not a folder, "
              "unreadable, empty (1 for the current one).",
              "# TYPE autodoc_workspace_folder_state gauge"]
    lines += [f"autodoc_workspace_folder_state{_labels(workspace=ws['name'], state=ws['folder'])} 1"
              for ws in workspaces if ws.get("folder") is not None]
    return lines


def resident_bytes(pid: int | str = "self") -> int:
    """Resident set size from /proc (0 where there is none)."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
