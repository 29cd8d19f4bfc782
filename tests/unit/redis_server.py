"""A throw-away `redis-server` for the tests: 127.0.0.1, a free port, nothing saved to disk."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
INSTALL_HINT = "`apt-get install redis-server` on Debian/Ubuntu, `brew install redis` on macOS"


def redis_server_executable() -> str | None:
    return shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _log_tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


@contextlib.contextmanager
def redis_server(workdir: Path, executable: str) -> Iterator[str]:
    """Runs redis-server in `workdir` until the block ends; yields its URL once it answers.
    RuntimeError (with the server's log) when it does not answer within START_TIMEOUT_S."""
    port = _free_port()
    log = workdir / "redis-server.log"
    command = [executable, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(workdir)]
    command += ["--save", "", "--appendonly", "no", "--logfile", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers_ping(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"redis-server did not start on port {port} (exit code {process.poll()}); "
                    f"log {log}:\n{_log_tail(log)}"
                )
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
