"""When the sandbox tests may skip: only where bubblewrap cannot start a sandbox and
CLAWVIZ_REQUIRE_SANDBOX is not set. `.ci/run` sets it, so in CI a sandbox that cannot start
fails those tests (as CLAWVIZ_REQUIRE_BROWSER does for the browser)."""

from __future__ import annotations

import os

import pytest

from clawviz.review import sandbox
from clawviz.settings import DEFAULT_SETTINGS

REQUIRE_ENV = "CLAWVIZ_REQUIRE_SANDBOX"


def sandbox_problem() -> str | None:
    return sandbox.bwrap_problem(sandbox._python_for(DEFAULT_SETTINGS))


def needs_sandbox() -> pytest.MarkDecorator:
    """skipif bubblewrap cannot run here, unless CLAWVIZ_REQUIRE_SANDBOX is set: then the test
    runs and fails on the refusal, which names the problem."""
    problem = sandbox_problem()
    return pytest.mark.skipif(
        problem is not None and not os.environ.get(REQUIRE_ENV),
        reason=f"bubblewrap cannot run here: {problem} (set {REQUIRE_ENV}=1 to fail instead)",
    )
