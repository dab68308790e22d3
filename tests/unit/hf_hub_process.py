# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hf-hub stand-in (tests/lab/standins/hf-hub) run from the unit tests: repos imported into its root, and the
server running with its request log read in the background."""

from __future__ import annotations

import http.client
import re
import select
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path
from urllib.parse import urlsplit

from line_follower import follow

HF_HUB = str(Path(__file__).resolve().parents[1] / "lab" / "standins" / "hf-hub")


def import_repo(root: Path, repo_id: str, src: Path, *refs: str) -> str:
    """``hf-hub --import`` the files of ``src`` as ``repo_id`` (with the refs ``refs``, besides main); the commit it printed."""
    ref_args = [arg for ref in refs for arg in ("--ref", ref)]
    done = subprocess.run(
        [sys.executable, HF_HUB, "--root", str(root), "--import", repo_id, str(src), *ref_args], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def wait_until(predicate: t.Callable[[], bool], timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


def call(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request, redirects not followed: status, headers (lower-case names), body."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=15)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


class Hub:
    """A running hf-hub: its URLs and its stdout, read line by line in the background."""

    def __init__(self, root: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, HF_HUB, "--root", str(root), "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.proc.stdout is not None
        assert select.select([self.proc.stdout], [], [], 15)[0], "hf-hub printed nothing"
        first = self.proc.stdout.readline()
        urls = re.findall(r"http://[\d.]+:\d+", first)
        assert urls, f"no URL in {first!r}"
        self.url = urls[0]
        self.cdn = urls[1] if len(urls) > 1 else None
        self.lines = [first.rstrip("\n")]
        self.reader = follow(self.proc.stdout, self.lines)

    def requests_since(self, mark: int) -> list[str]:
        """The request lines logged since ``mark`` (a len(self.lines)), once a later request of ours shows up."""
        status, _headers, _body = call(self.url + "/api/agent-harnesses?sentinel")
        assert status == 200
        wait_until(lambda: any("sentinel" in line for line in self.lines[mark:]))
        return [line for line in self.lines[mark:] if line.startswith("[") and "sentinel" not in line]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=15)
        self.reader.join(timeout=5)
        return rc
