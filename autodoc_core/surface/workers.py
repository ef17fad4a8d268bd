"""``autodoc mcp --http ADDR --workers N``: N server processes on one listening socket over one database, so a
search uses every core (one process is bound to one by the GIL between its SQLite and numpy parts).

This process binds the port (SO_REUSEPORT, not listening), runs Litestream when replication is asked for (one
child for all of them), and starts N workers, each ``autodoc ... mcp --http ADDR --worker-socket FD``, which
listens on that port with a socket of its own (``mcp_http.worker_socket``): the kernel spreads new connections
over them. The writer lease decides which one writes (indexes, embeds,
scans); the others serve searches and reads. A worker that dies is started again; SIGTERM or SIGINT stops
them all. Each worker answers ``/health`` and ``/metrics`` for itself: a scrape reaches one of them.
"""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import threading
from types import FrameType

log = logging.getLogger("autodoc.mcp.workers")

RESTART_SECONDS = 1.0
STOP_SECONDS = 10.0


def worker_command(argv: list[str], sock: socket.socket) -> list[str]:
    return [sys.executable, "-m", "autodoc_core", *argv, "--worker-socket", str(sock.fileno())]


def run_workers(argv: list[str], sock: socket.socket, count: int) -> int:
    """Run ``count`` workers until a signal stops this process."""
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)
    command = worker_command(argv, sock)
    workers = [_start(command, sock) for _ in range(count)]
    while not stopping.wait(RESTART_SECONDS):
        for index, worker in enumerate(workers):
            if worker.poll() is not None:
                log.warning("worker %d (pid %d) ended with status %s; starting it again", index + 1, worker.pid,
                            worker.returncode)
                workers[index] = _start(command, sock)
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    for worker in workers:
        try:
            worker.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return 0


def _start(command: list[str], sock: socket.socket) -> subprocess.Popen[bytes]:
    from autodoc_core.surface.replication import ended_with_parent

    return subprocess.Popen(command, pass_fds=(sock.fileno(),), stdin=subprocess.DEVNULL,
                            preexec_fn=ended_with_parent)
