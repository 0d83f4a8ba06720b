"""A local Apache Kafka broker for development, the tests and the benches: `deploy/local-kafka` started,
stopped and restarted, and whether one can start here (`streams.dev` says how it is used)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
LOCAL_KAFKA = ROOT / "deploy" / "local-kafka"
READY_LINE = "Kafka Server started"
"""What the broker logs once it serves; `.ci/run` and the tests' summary show this line."""
VERSION_LINE = "Kafka version: "
"""The broker's version line in its log (Kafka's AppInfoParser, 3.x and 4.x alike), shown with it."""
BOOTSTRAP = re.compile(r"127\.0\.0\.1:\d+")


class ClusterError(RuntimeError):
    """The dev cluster could not do what was asked; the message says what, with the logs that show why."""


class BrokerUnavailable(ClusterError):
    """No local broker can be started here: `deploy/local-kafka` or Java is missing."""


# --- ports and the broker ------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reachable(bootstrap: str, timeout_s: float = 5.0) -> bool:
    """Whether the first of the bootstrap servers (`host:port,...`) accepts a TCP connection."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def _java() -> str | None:
    """The Java that `deploy/local-kafka` would run, looked up in the same order as the script does."""
    explicit = os.environ.get("NEARDUP_KAFKA_JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def missing_prerequisites() -> str | None:
    """Why `deploy/local-kafka` cannot start a broker here, or None when it can try.

    Maven is needed only until the broker's jars are cached; when it is missing then, the script
    says so and `start_broker` raises with that message."""
    if not LOCAL_KAFKA.is_file():
        return f"{LOCAL_KAFKA} is missing: the local broker needs a checkout of the repository"
    if _java() is None:
        return "no Java: deploy/local-kafka needs Java 17 and Maven"
    return None


@dataclass(frozen=True)
class Broker:
    """A Kafka broker the cluster talks to: one `deploy/local-kafka` started in `dir`, or (`dir`
    None) a running broker found elsewhere, e.g. named by an environment variable."""

    bootstrap: str
    dir: Path | None = None
    startup: str = ""
    """What `deploy/local-kafka start` wrote on standard error."""

    @property
    def local(self) -> bool:
        return self.dir is not None

    @property
    def log(self) -> Path | None:
        return self.dir / "kafka.log" if self.dir else None

    @property
    def port(self) -> int:
        """The port of the (first) bootstrap server."""
        return int(self.bootstrap.split(",")[0].rpartition(":")[2])

    @property
    def pid(self) -> int | None:
        """The broker's JVM, while `deploy/local-kafka` runs it."""
        try:
            return int((self.dir / "kafka.pid").read_text()) if self.dir else None
        except (OSError, ValueError):
            return None

    def started_lines(self) -> list[str]:
        """The broker log's "Kafka version: ..." and "Kafka Server started" lines (empty when there is no log)."""
        try:
            text = self.log.read_text(errors="replace") if self.log else ""
        except OSError:
            return []
        return [line for line in text.splitlines() if READY_LINE in line or VERSION_LINE in line]


def _local_kafka(*args: str) -> list[str]:
    # run by this interpreter: the script needs only the standard library, and no exec bit or PATH
    return [sys.executable, str(LOCAL_KAFKA), *args]


def start_broker(directory: Path, *, port: int = 0, keep_data: bool = False, echo: bool = False,
                 timeout_s: float = 900.0, config: dict[str, str] | None = None) -> Broker:
    """Starts a broker on `port` (0: a free one) with its state in `directory` and returns once it serves.

    `keep_data` keeps the topics, offsets and groups of the broker that ran in `directory` before
    (`--keep-data`): with that broker's port, it is the same broker started again (`restart_broker`).
    `echo` copies the script's progress (standard error) to ours as it comes, e.g. the first run's
    Maven fetch; it is kept in `Broker.startup` either way. On Ctrl-C or a timeout the script is
    sent SIGTERM, on which it stops the broker it was starting. `config`: broker settings beside the
    script's (`--config KEY=VALUE`). Raises `BrokerUnavailable` when the prerequisites are missing and
    `ClusterError` when the start fails."""
    problem = missing_prerequisites()
    if problem:
        raise BrokerUnavailable(problem)
    args = ["start", "--port", str(port), "--dir", str(directory), *(["--keep-data"] if keep_data else []),
            *(f"--config={key}={value}" for key, value in (config or {}).items())]
    proc = subprocess.Popen(_local_kafka(*args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    err: list[str] = []

    def drain(stream: IO[str], into: list[str], copy: bool) -> None:
        for line in stream:
            into.append(line)
            if copy:
                sys.stderr.write(line)
                sys.stderr.flush()

    assert proc.stdout is not None and proc.stderr is not None
    readers = [threading.Thread(target=drain, args=(proc.stdout, out, False), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, err, echo), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        returncode = proc.wait(timeout=timeout_s)
    except BaseException:  # the timeout, Ctrl-C, SIGTERM: leave no half-started broker behind
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    finally:
        for reader in readers:
            reader.join(timeout=10)
    stdout, stderr = "".join(out), "".join(err)
    lines = stdout.strip().splitlines()
    if returncode != 0 or not lines or not BOOTSTRAP.fullmatch(lines[-1]):
        raise ClusterError(f"deploy/local-kafka start failed (exit {returncode}):\n{stdout}{stderr}")
    return Broker(lines[-1], directory, stderr)


def stop_broker(directory: Path, *, timeout_s: float = 120.0) -> None:
    """Stops the broker of `directory` (nothing happens when none runs there)."""
    if LOCAL_KAFKA.is_file():
        subprocess.run(_local_kafka("stop", "--dir", str(directory)), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout_s, check=False)


def restart_broker(broker: Broker, *, down_s: float = 0.0, timeout_s: float = 300.0) -> Broker:
    """Stops a local broker, waits `down_s`, and starts it again in the same dir on the same port with
    its data kept: clients configured with its address find it again, with every topic, offset and group.
    Raises `ClusterError` when the broker is not local or does not start (e.g. its port was taken)."""
    if broker.dir is None:
        raise ClusterError(f"{broker.bootstrap} was not started here: it cannot be restarted")
    stop_broker(broker.dir)
    time.sleep(down_s)
    return start_broker(broker.dir, port=broker.port, keep_data=True, timeout_s=timeout_s)
