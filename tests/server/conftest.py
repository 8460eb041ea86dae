"""Starts `muninn serve` on a free loopback port for the server tests and stops it with SIGTERM.

Every wait is bounded: a server that does not print its listening line within START_TIMEOUT
seconds, or that does not exit within STOP_TIMEOUT seconds of SIGTERM, fails the test."""

import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request

import pytest

EXE = os.environ.get("MUNINN_EXE", "")
DATA = os.environ.get("MUNINN_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
START_TIMEOUT = 60.0
STOP_TIMEOUT = 60.0


class Server:
    """A running `muninn serve`: its base URL, and its output lines as they come."""

    def __init__(self, model, *args, env=None):
        if not EXE or not os.path.exists(EXE):
            pytest.fail(f"MUNINN_EXE does not name the muninn executable: {EXE!r}")
        cmd = [EXE, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, **(env or {})})
        self.lines = queue.Queue()
        self.output = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                pytest.fail(f"muninn serve did not start within {START_TIMEOUT} s: {''.join(self.output)}")
            try:
                line = self.lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                if self.proc.poll() is not None:
                    time.sleep(0.2)
                    pytest.fail(f"muninn serve exited with {self.proc.returncode}: {''.join(self.output)}")
                continue
            if line is None:
                pytest.fail(f"muninn serve exited with {self.proc.wait(5)}: {''.join(self.output)}")
            m = re.search(r"listening on http://([^:]+):(\d+)", line)
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                self.base = f"http://{self.host}:{self.port}"
                return

    def _read(self):
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def metrics(self, key=None):
        """GET /metrics as {series line name with labels: value}."""
        with urllib.request.urlopen(self.base + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out if key is None else out.get(key, 0.0)

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig` and returns the exit status (fails the test on a hang)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"muninn serve did not exit within {STOP_TIMEOUT} s of the signal")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def start_server():
    """start_server(model, *flags) -> Server; every server started is stopped (and must exit 0)."""
    started = []

    def start(model, *args, **kw):
        s = Server(model, *args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        if s.proc.poll() is None:
            assert s.stop() == 0, "".join(s.output)


def model_dir(name):
    return os.path.join(DATA, name)


@pytest.fixture(scope="module")
def module_server():
    """One server per (model, flags) for a whole module."""
    servers = {}

    def get(model, *args):
        key = (model, args)
        if key not in servers:
            servers[key] = Server(model_dir(model), *args)
        return servers[key]

    yield get
    for s in servers.values():
        assert s.stop() == 0, "".join(s.output)


def cli(*args, timeout=120):
    """Runs the muninn CLI; returns stdout (fails on a non-zero exit)."""
    r = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout
