"""Browser: the app behind a loopback proxy that signs requests in (X-Forwarded-User, as
oauth2-proxy sets it) records sign-offs under that user; the Reviewer field is not offered.
The same app in read-only mode shows the note instead of the Ingest form."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port, start_app, stop_app, wait_for_app_run  # noqa: I001 - tests/browser
from sqlmodel import Session
from test_signoff import _build_task_store

from clawviz.review.signoff import review_history
from clawviz.store.db import get_engine

PROXY = Path(__file__).with_name("header_proxy.py")
USER = "carol-curator"


def _start_proxy(upstream: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    out = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(PROXY), str(port), upstream, "X-Forwarded-User", USER],
        stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise TimeoutError(f"the header proxy did not answer: {log.read_text()[-2000:]}")


@pytest.fixture
def proxied(tmp_path):
    db_url = _build_task_store(tmp_path)
    server = start_app(
        db_url,
        tmp_path / "server.log",
        extra_env={"CLAWVIZ_TRUSTED_USER_HEADER": "X-Forwarded-User", "CLAWVIZ_READ_ONLY": "1"},
    )
    proxy = None
    try:
        proxy, url = _start_proxy(server.url, tmp_path / "proxy.log")
        yield url, server.url, db_url
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)
        stop_app(server.process)


@pytest.mark.browser
def test_signoff_through_the_proxy_is_the_proxy_user(proxied, page):
    url, direct, db_url = proxied
    # A browser may send the header itself: the proxy replaces it.
    page.context.set_extra_http_headers({"X-Forwarded-User": "mallory"})
    page.goto(url + "/tasks?task=task_0001")
    wait_for_app_run(page)
    page.get_by_role("heading", name="task_0001").wait_for()
    page.get_by_text(f"Reviewer: {USER}").wait_for()
    assert page.get_by_label("Reviewer").count() == 0
    page.get_by_text("accept", exact=True).click()
    page.get_by_role("button", name="Save decision").click()
    wait_for_app_run(page)
    page.get_by_text(f"Saved: accept by {USER}.").wait_for(timeout=15_000)
    # Read-only: checker runs are hidden, with the note.
    page.get_by_role("tab", name="Run checker").click()
    page.get_by_text("Running checkers is off here").wait_for()
    page.goto(url + "/ingest")
    wait_for_app_run(page)
    page.get_by_text("is off here: this deployment is read-only").wait_for()
    assert page.get_by_label("File or folder on the server").count() == 0
    # Straight to the app (no proxy), the browser's own header is still trusted only because
    # this test set the setting: the deployment note says to expose the app via the proxy only.
    page.context.set_extra_http_headers({})
    page.goto(direct + "/tasks?task=task_0001")
    wait_for_app_run(page)
    page.get_by_role("heading", name="task_0001").wait_for()
    # No header: the reviewer types a name (waited for: the sign-off column draws after the
    # heading).
    page.get_by_label("Reviewer").wait_for()
    assert page.get_by_text(f"Reviewer: {USER}").count() == 0
    with Session(get_engine(db_url)) as s:
        assert [(r.decision, r.reviewer) for r in review_history(s, "task_0001")] == [
            ("accept", USER)
        ]
