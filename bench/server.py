"""`streamlit run app.py` on 127.0.0.1 and a free port, stopped for sure at the end."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"  # git-ignored
HOST = "127.0.0.1"  # the only address this harness ever talks to
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """GET http://127.0.0.1:port/path; (status, headers, body). Never another host."""
    url = f"http://{HOST}:{int(port)}/{path.lstrip('/')}"
    req = urllib.request.Request(url, headers={"Host": f"{HOST}:{port}"})  # noqa: S310
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - fixed local URL
        return resp.status, dict(resp.headers.items()), resp.read()


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process and every process it started (the server's forward
    worker, models/serving/forward_worker.py): psutil when installed, else /proc/<pid>/status and
    /proc/<pid>/task/*/children."""
    try:
        import psutil

        process = psutil.Process(pid)
        total = process.memory_info().rss
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # a child that has just ended
                total += child.memory_info().rss
        return total
    except ImportError:
        pass
    except Exception:  # the process is gone
        return None
    own = _proc_rss(pid)
    if own is None:
        return None
    return own + sum(_proc_rss(child) or 0 for child in _proc_children(pid))


def _proc_rss(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _proc_children(pid: int) -> list[int]:
    """Every descendant of `pid`, from the kernel's per-thread children lists."""
    found = []
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in path.read_text().split():
                found += [int(child), *_proc_children(int(child))]
    return found


def active_sessions(port: int) -> int | None:
    """Streamlit's own gauge at /_stcore/metrics: sessions with an open websocket."""
    try:
        _, _, body = http_get(port, "_stcore/metrics?families=active_sessions")
    except (urllib.error.URLError, OSError):
        return None
    match = re.search(r"^active_sessions\s+(\d+)", body.decode(), re.MULTILINE)
    return int(match.group(1)) if match else None


def cache_bytes(port: int) -> int | None:
    """Bytes held by st.cache_data / st.cache_resource, from /_stcore/metrics."""
    try:
        _, _, body = http_get(port, "_stcore/metrics?families=cache_memory_bytes")
    except (urllib.error.URLError, OSError):
        return None
    values = re.findall(r"^cache_memory_bytes\{[^}]*\}\s+(\d+)", body.decode(), re.MULTILINE)
    return sum(int(v) for v in values)


class RssSampler:
    """Samples a process's RSS in a thread; `.peak` is the highest figure seen."""

    def __init__(self, pid: int, interval_s: float = 0.2):
        self.pid = pid
        self.interval_s = interval_s
        self.peak = 0
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = rss_bytes(self.pid)
            if rss is not None:
                self.samples.append((time.monotonic(), rss))
                self.peak = max(self.peak, rss)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Server:
    """One `streamlit run app.py` (or another script) process in its own process group.

    `started_at` is time.monotonic() just before the process was created, so
    "process start → first chart" can be measured from it; `started_wall` is time.time()
    then, for a clock read inside a browser page.
    """

    def __init__(
        self,
        log_path: Path | None = None,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        script: str = "app.py",
    ):
        self.port = free_port()
        self.script = script  # relative to the repository root
        self.log_path = log_path or RESULTS_DIR / f"streamlit-{self.port}.log"
        self.extra_args = extra_args
        self.env = env or {}
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.started_wall = 0.0  # time.time() at the same moment, for a browser's clock

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> Server:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            self.script,
            "--server.port",
            str(self.port),
            "--server.address",
            HOST,
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            *self.extra_args,
        ]
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.env)
        with open(self.log_path, "w", encoding="utf-8") as log:
            self.started_at = time.monotonic()
            self.started_wall = time.time()
            self.proc = subprocess.Popen(  # noqa: S603 - fixed command, our own interpreter
                cmd,
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        return self

    def wait_healthy(self, timeout_s: float = START_TIMEOUT_S) -> float:
        """Poll /_stcore/health; returns seconds since process start."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early; log:\n{self.log_tail()}")
            try:
                status, _, _ = http_get(self.port, "_stcore/health", timeout=2)
                if status == 200:
                    return time.monotonic() - self.started_at
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"streamlit not healthy after {timeout_s:.0f} s")
            time.sleep(0.05)

    def rss(self) -> int | None:
        return rss_bytes(self.pid) if self.proc is not None else None

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self) -> None:
        """SIGTERM the process group, SIGKILL if it lingers. Safe to call twice."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> Server:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
