"""Parsing many documents: in worker processes for large runs (parsing and symbol extraction are
pure Python and CPU-bound), here for small ones; results come back in input order."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from autodoc_core.parse.document import ParsedDocument, parse_document
from autodoc_core.parse.frontmatter import FacetSchema

PARALLEL_PARSE_MIN = 200  # below this, starting worker processes costs more than it saves
MAX_PARSE_WORKERS = 4
PARSE_WINDOW = 1024
PARENT_CHECK_SECONDS = 0.5  # how often a parse worker checks that the indexer is alive


def parse_all(files: list[tuple[bytes, str]], schema: FacetSchema, budget: int) -> Iterator[ParsedDocument]:
    """``(raw bytes, relative path)`` pairs parsed, in order, while the caller writes earlier ones."""
    jobs = ((raw, relpath, schema, budget) for raw, relpath in files)
    workers = min(os.cpu_count() or 1, MAX_PARSE_WORKERS)
    if len(files) < PARALLEL_PARSE_MIN or workers < 2:
        yield from (parse_document(*job) for job in jobs)
        return
    # spawn, not fork: the caller may hold threads (the embedder, an editor's RPC loop).
    context = multiprocessing.get_context("spawn")
    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_exit_with_parent,
                                   initargs=(os.getpid(),))
    except OSError:  # no processes or semaphores to be had: parse here, just slower
        yield from (parse_document(*job) for job in jobs)
        return
    with pool:
        # map() submits everything at once: feed it a window at a time to bound memory.
        while window := list(itertools.islice(jobs, PARSE_WINDOW)):
            yield from pool.map(_parse_job, window, chunksize=16)


def _exit_with_parent(parent_pid: int) -> None:
    """In a parse worker: exit as soon as the indexing process is gone. A SIGKILLed parent cannot
    shut its pool down, and its workers would otherwise wait on the pipe forever."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="autodoc-parent-watch", daemon=True).start()


def _parse_job(job: tuple) -> ParsedDocument:
    return parse_document(*job)
