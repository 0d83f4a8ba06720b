"""Headless Chromium for tests: the DOM a page renders to and a screenshot of it.

Debian's ``chromium`` (``/usr/bin/chromium``, installed by ``.ci/run``) is run once per call with a fresh
profile in a temporary directory, and with every feature that would reach out to the network off (this
machine and many crawl clusters reach nothing outside), so what a test sees is the page alone. Scripts
on the page run: ``render`` returns the DOM after load, plus ``wait_ms`` of virtual time for timers and
fetches (``--virtual-time-budget``). Each call has a time limit; on expiry the browser's whole process
group is killed and the test fails with what Chromium printed.

Without Chromium a test that calls ``chromium_path()`` is skipped, or fails under ``CI=true``.
``docs_screenshot`` also copies its PNG into ``docs/`` when ``NEARDUP_DOCS_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 90.0

# No sandbox (containers have no user namespaces), no GPU, and nothing that phones home.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
)


def chromium_path() -> str:
    """The Chromium binary; skips the calling test without one (fails it under ``CI=true``)."""
    override = os.environ.get("NEARDUP_CHROMIUM", "").strip()
    found = shutil.which(override) if override else None
    if not found and not override:
        found = next((p for p in map(shutil.which, CANDIDATES) if p), None)
    if found:
        return found
    message = (
        f"no Chromium: NEARDUP_CHROMIUM={override!r} is not an executable"
        if override
        else "no Chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(message)
    pytest.skip(message)


def _url(url_or_file: str | Path) -> str:
    """A URL as given, or a file's ``file://`` URL."""
    text = str(url_or_file)
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def _run(args: list[str], timeout_s: float) -> str:
    """Runs Chromium with a fresh profile; returns stdout, fails the test on error or time-out."""
    with tempfile.TemporaryDirectory(prefix="neardup-chromium-") as profile:
        cmd = [chromium_path(), *FLAGS, f"--user-data-dir={profile}", *args]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own group, so a time-out kills its helpers too
            env={**os.environ, "HOME": profile},
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"chromium did not finish in {timeout_s} s: {' '.join(cmd)}\n{_tail(err)}")
        if proc.returncode != 0:
            pytest.fail(f"chromium exited {proc.returncode}: {' '.join(cmd)}\n{_tail(err)}")
        return out.decode("utf-8", "replace")


def _tail(stderr: bytes, lines: int = 20) -> str:
    """Chromium's last stderr lines, without the D-Bus noise of a machine without a session bus."""
    kept = [
        line
        for line in stderr.decode("utf-8", "replace").splitlines()
        if "dbus" not in line and "unexpected operator" not in line
    ]
    return "\n".join(kept[-lines:])


def render(url_or_file: str | Path, *, wait_ms: int = 0, timeout_s: float = TIMEOUT_S) -> str:
    """The serialised DOM of a URL or an HTML file after load (scripts run), plus ``wait_ms`` of virtual time."""
    args = ["--dump-dom"]
    if wait_ms:
        args.append(f"--virtual-time-budget={wait_ms}")
    return _run([*args, _url(url_or_file)], timeout_s)


def screenshot(
    url_or_file: str | Path,
    png_path: str | Path,
    width: int = 1200,
    height: int = 1600,
    *,
    wait_ms: int = 0,
    timeout_s: float = TIMEOUT_S,
) -> Path:
    """Saves a PNG of the page's first ``width`` x ``height`` CSS pixels; returns its path."""
    png = Path(png_path).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    args = [f"--screenshot={png}", f"--window-size={width},{height}", "--force-device-scale-factor=1"]
    if wait_ms:
        args.append(f"--virtual-time-budget={wait_ms}")
    _run([*args, _url(url_or_file)], timeout_s)
    if not png.is_file() or png.stat().st_size == 0:
        pytest.fail(f"chromium wrote no screenshot to {png}")
    return png


DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_screenshot(
    url_or_file: str | Path,
    name: str,
    tmp_dir: Path,
    width: int = 1200,
    height: int = 1600,
    *,
    wait_ms: int = 0,
) -> Path:
    """A screenshot in `tmp_dir`, also copied to ``docs/<name>`` when ``NEARDUP_DOCS_SCREENSHOTS=1``: how the
    README's pictures are made, while an ordinary test run leaves the working tree alone."""
    png = screenshot(url_or_file, tmp_dir / name, width, height, wait_ms=wait_ms)
    if os.environ.get("NEARDUP_DOCS_SCREENSHOTS") == "1":
        DOCS.mkdir(exist_ok=True)
        shutil.copyfile(png, DOCS / name)
    return png
