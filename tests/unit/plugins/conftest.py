# Copyright (c) 2026 sparkops.inference developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the plugin tests that talk HTTP to the fakes of tests/unit/fake_openai.py.

``no_proxy`` is not autouse here, so that it touches only the tests that ask for it: a test module that talks to
127.0.0.1 takes it for every test with ``pytestmark = pytest.mark.usefixtures("no_proxy")``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_openai import FakeProxy, clear_proxy_variables, point_proxies_at


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to 127.0.0.1 must not go through a proxy the test machine's environment may set."""
    clear_proxy_variables(monkeypatch)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProxy]:
    """A proxy that every proxy variable of the environment names (and no ``no_proxy``)."""
    clear_proxy_variables(monkeypatch)
    fake = FakeProxy()
    point_proxies_at(monkeypatch, fake.url)
    try:
        yield fake
    finally:
        fake.close()
