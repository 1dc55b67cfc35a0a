"""A real redis-server (Debian package) for tests, on a free port, that can be stopped and started again."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server is missing on CI (.ci/run installs the Debian package)")
            pytest.skip("redis-server not installed (apt-get install redis-server)")
        self.binary = binary
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


class SentinelServer:
    """A real Redis Sentinel (the same binary, `--sentinel`) watching `master` as service `name`."""

    def __init__(self, master: RedisServer, name: str, workdir: str) -> None:
        self.master = master
        self.name = name
        self.port = _free_port()
        self.config = os.path.join(workdir, f"sentinel-{self.port}.conf")
        self.proc: subprocess.Popen | None = None

    def start(self) -> SentinelServer:
        with open(self.config, "w") as f:
            f.write(
                f"port {self.port}\nbind 127.0.0.1\n"
                f"sentinel monitor {self.name} 127.0.0.1 {self.master.port} 1\n"
                f"sentinel down-after-milliseconds {self.name} 1000\n"
            )
        self.proc = subprocess.Popen(
            [self.master.binary, self.config, "--sentinel"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(f"SENTINEL get-master-addr-by-name {self.name}\r\n".encode())
                    if str(self.master.port).encode() in s.recv(256):
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("redis sentinel did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None
