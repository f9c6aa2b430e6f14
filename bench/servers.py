"""The processes the benchmark drives: LeadGreen, the precomputed-bytes baseline and nginx."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http(port: int, line: str, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send one request line of bench/graphql.lua's format; return the status and body."""
    method, _, rest = line.partition(" ")
    path, _, body = rest.partition(" ")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body.encode() if method == "POST" else None,
        headers={"content-type": "application/json"},
        method=method,
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@dataclass
class Server:
    """A process of ours listening on 127.0.0.1:port, stopped by its own process id."""

    name: str
    command: list[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    log: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    def start(self, directory: Path) -> None:
        self.log = directory / f"{self.name}.log"
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(
            self.command,
            env={**os.environ, **self.env},
            cwd=ROOT,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_until_answering(self, line: str, timeout: float = 30.0) -> float:
        """Seconds from process start to the first 200 answer to `line`."""
        assert self.process is not None
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.tail()}")
            try:
                status, _ = http(self.port, line, timeout=2)
            except OSError:
                time.sleep(0.005)
                continue
            if status == 200:
                return time.perf_counter() - self.started_at
            raise RuntimeError(f"{self.name} answered {status}: {self.tail()}")
        raise RuntimeError(f"{self.name} did not answer within {timeout} s: {self.tail()}")

    def cpu_seconds(self) -> float:
        assert self.process is not None
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until the process stops working off requests a finished wrk run left behind."""
        deadline, used = time.perf_counter() + timeout, self.cpu_seconds()
        while time.perf_counter() < deadline:
            time.sleep(0.1)
            now = self.cpu_seconds()
            if now - used <= 0.01:
                return
            used = now

    def rss_mb(self) -> float:
        """Resident memory of the process (uvicorn with one worker serves in this process)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log and self.log.exists() else ""
        return text[-2000:]


def leadgreen(name: str, database_url: str, snapshot: Path, **env: str) -> Server:
    port = free_port()
    settings = {
        "LEADGREEN_DATABASE_URL": database_url,
        "LEADGREEN_SOURCE": str(snapshot),
        "LEADGREEN_PORT": str(port),
        "LEADGREEN_WORKERS": "1",
        "LEADGREEN_LOG_LEVEL": "warning",
        **env,
    }
    return Server(name, [str(BIN / "leadgreen"), "serve"], port, settings)


def precomputed(body: Path) -> Server:
    port = free_port()
    command = [str(BIN / "uvicorn"), "bench.baseline:create_app", "--factory"]
    command += ["--port", str(port), "--log-level", "warning"]
    return Server("precomputed", command, port, {"LEADGREEN_BENCH_BODY": str(body)})


NGINX_CONF = """\
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  default_type application/json;
  sendfile on;
  client_body_temp_path {dir}/tmp;
  proxy_temp_path {dir}/tmp;
  fastcgi_temp_path {dir}/tmp;
  uwsgi_temp_path {dir}/tmp;
  scgi_temp_path {dir}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {dir}/www;
  }}
}}
"""


def nginx(directory: Path, body: Path) -> Server | None:
    """nginx serving `body` as /model-page.json; None when nginx is not installed."""
    binary = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if binary is None:
        return None
    home = directory / "nginx"
    (home / "www").mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    shutil.copyfile(body, home / "www" / "model-page.json")
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    (home / "nginx.conf").write_text(NGINX_CONF.format(dir=home, port=port, user=user))
    command = [binary, "-p", str(home), "-c", str(home / "nginx.conf"), "-g", "daemon off;"]
    return Server("nginx", command, port)
