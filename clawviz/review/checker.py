"""Run a task's checker (untrusted code) on a workspace, confined by bubblewrap, with a time limit.

ClawGym convention (`reward/check.py`): `python check.py <workspace>` prints a JSON object of
named sub-scores; `reward.sh` averages them. Here the checker runs on a private copy of the
workspace inside the sandbox described in `clawviz.review.sandbox` (and docs/SECURITY.md); the
whole sandbox is killed when the time limit passes. It never runs inside the app process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clawviz.review import sandbox
from clawviz.review.archive import ArchiveError, copy_workspace, open_workspace, plan_tree
from clawviz.settings import DEFAULT_SETTINGS, Settings

CheckerStatus = Literal["ok", "timeout", "crash", "bad_output"]


class CheckerError(ValueError):
    """The checker cannot be started (no check.py in the task folder)."""


@dataclass
class CheckerResult:
    """Outcome of one checker run; `message` says in one sentence what happened."""

    status: CheckerStatus
    scores: dict[str, float] = field(default_factory=dict)
    reward: float | None = None
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    duration: float = 0.0
    message: str = ""
    sandbox: str = "bwrap"
    """'bwrap' (confined) or 'process_group' (the weaker mode; `warning` says so)."""
    warning: str = ""
    quota_full: list[str] = field(default_factory=list)
    """The sandbox quotas the checker filled (workspace, /tmp, /dev/shm; bytes or entries)."""

    @property
    def failed_checks(self) -> list[str]:
        return [k for k, v in self.scores.items() if v < 1.0]


def find_checker(task_folder: str | Path) -> Path:
    """Return the task's `reward/check.py` (or the path itself when it is a .py file)."""
    p = Path(task_folder)
    if p.is_file() and p.suffix == ".py":
        return p
    for candidate in (p / "reward" / "check.py", p / "check.py"):
        if candidate.is_file():
            return candidate
    raise CheckerError(f"{p}: no reward/check.py in this task folder")


def parse_scores(stdout: str) -> dict[str, Any] | None:
    """The last JSON object printed on stdout (one line or pretty-printed), or None."""
    text = stdout.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except ValueError:
        pass
    # The last complete object wins.
    for obj, end in _objects_from_the_end(text):
        if isinstance(obj, dict) and not text[end:].strip().startswith(("}", "]", ",")):
            return obj
    return None


def _objects_from_the_end(text: str) -> Iterator[tuple[Any, int]]:
    """(value, end offset) of each JSON value that starts a line with `{`, last line first."""
    decoder = json.JSONDecoder()
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for i in range(len(lines) - 1, -1, -1):
        stripped = lines[i].lstrip()
        if not stripped.startswith("{"):
            continue
        start = offsets[i] + len(lines[i]) - len(stripped)
        try:
            yield decoder.raw_decode(text, start)
        except ValueError:
            continue


def _is_score_object(obj: Any) -> bool:
    """The documented score format: a non-empty JSON object whose every value is a finite
    number or a boolean (named sub-scores). Anything else is text, not a score line."""
    return (
        isinstance(obj, dict)
        and bool(obj)
        and all(
            isinstance(v, bool) or (isinstance(v, (int, float)) and math.isfinite(v))
            for v in obj.values()
        )
    )


def last_score_object(stdout: str) -> dict[str, Any] | None:
    """The checker's own last score object on stdout (one line or pretty-printed), or None.

    Only objects in the documented format count, so JSON the checker echoes after its scores
    (agent text, logs, nested reports) never replaces them."""
    text = stdout.strip()
    if not text:
        return None
    for obj, end in _objects_from_the_end(text):
        # The object must end its line: `{"a": 1} trailing text` is not a score line.
        if text[end:].split("\n", 1)[0].strip():
            continue
        if _is_score_object(obj):
            return obj
    return None


def _numeric_scores(obj: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in obj.items():
        if isinstance(v, bool):
            out[str(k)] = 1.0 if v else 0.0
        elif isinstance(v, (int, float)) and math.isfinite(v):
            out[str(k)] = float(v)
    return out


def _minimal_env(home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if "SYSTEMROOT" in os.environ:
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    return env


UNSANDBOXED_WARNING = (
    "Checker ran WITHOUT the bubblewrap sandbox (checker_allow_unsandboxed is on): it could "
    "read this machine's files and environment and open network connections."
)


def sandbox_refusal(problem: str) -> str:
    return (
        f"Checker not run: {problem}. Checkers are untrusted code and run only inside the "
        "bubblewrap sandbox; install bubblewrap and allow user namespaces, or set "
        "checker_allow_unsandboxed to accept the weaker process-group mode."
    )


def run_checker(
    task_folder: str | Path,
    workspace: str | Path,
    timeout_s: float | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
) -> CheckerResult:
    """Run `reward/check.py <copy of workspace>` in the sandbox and parse its sub-scores.

    Raises CheckerError when there is no checker, or when bubblewrap cannot run here and the
    weaker mode is not allowed.
    """
    check_py = find_checker(task_folder)
    timeout = float(timeout_s if timeout_s is not None else settings.checker_timeout_s)
    if not math.isfinite(timeout) or timeout <= 0:
        raise CheckerError(f"timeout {timeout_s!r}: give a positive, finite number of seconds")
    python = sandbox._python_for(settings)
    problem = sandbox.bwrap_problem(python)
    if problem is not None and not settings.checker_allow_unsandboxed:
        raise CheckerError(sandbox_refusal(problem))
    limits = sandbox.Limits.from_settings(settings, timeout)
    if problem is None:
        with open_workspace(workspace, settings=settings) as folder:
            payload = sandbox.Payload(
                plan_tree(check_py.parent, settings=settings), plan_tree(folder, settings=settings)
            )
            too_big = sandbox.quota_problem(payload, limits)
            if too_big:
                raise CheckerError(f"Checker not run: {too_big}.")
            outcome = sandbox.run_sandboxed(
                python, check_py.name, limits, payload, timeout_s=timeout
            )
        return _result(outcome, timeout, limits, "bwrap", "")
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-check-"))
    try:
        reward_dir = tmp / "reward"
        shutil.copytree(check_py.parent, reward_dir, symlinks=True)
        work = tmp / "workspace"
        with open_workspace(workspace, settings=settings) as folder:
            copy_workspace(folder, work, settings=settings)
        home = tmp / "home"
        home.mkdir()
        cmd = [python, str(reward_dir / check_py.name), str(work)]
        outcome = sandbox.run_bounded(
            cmd,
            env=_minimal_env(home),
            cwd=work,
            timeout_s=timeout,
            tail_bytes=limits.output_bytes,
            preexec_fn=sandbox.rlimit_preexec(limits),
        )
        return _result(
            outcome, timeout, limits, "process_group", f"{UNSANDBOXED_WARNING} ({problem})"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_QUOTA_NAMES = {
    "workspace": ("workspace", "sandbox_workspace_max_bytes", "sandbox_workspace_max_files"),
    "tmp": ("/tmp", "sandbox_tmp_max_bytes", "sandbox_tmp_max_files"),
    "shm": ("/dev/shm", "sandbox_tmp_max_bytes", "sandbox_tmp_max_files"),
}


def quotas_filled(report: dict[str, Any]) -> list[str]:
    """One phrase per sandbox quota the checker filled (no page or no entry left), from the
    init's report: e.g. 'the workspace's 50000 entries (sandbox_workspace_max_files)'."""
    left = report.get("left")
    if not isinstance(left, dict):
        return []
    full: list[str] = []
    for key, (label, bytes_name, files_name) in _QUOTA_NAMES.items():
        value = left.get(key)
        if not (isinstance(value, list) and len(value) == 2):
            continue
        free_bytes, free_files = value
        if isinstance(free_bytes, int) and free_bytes < 4096:
            full.append(f"the {label} quota in bytes ({bytes_name})")
        if isinstance(free_files, int) and free_files <= 0:
            full.append(f"the {label} quota of entries ({files_name})")
    return full


def _result(
    outcome: sandbox.RunOutcome,
    timeout: float,
    limits: sandbox.Limits,
    mode: str,
    warning: str,
) -> CheckerResult:
    setup_error = outcome.report.get("setup_error")
    if isinstance(setup_error, str) and not outcome.timed_out:
        result = CheckerResult(
            "crash",
            stdout=outcome.stdout.text(),
            stderr=outcome.stderr.text(),
            returncode=outcome.returncode,
            duration=outcome.duration,
            message=f"Checker not started: {setup_error}.",
        )
    elif outcome.timed_out:
        result = CheckerResult(
            "timeout",
            stdout=outcome.stdout.text(),
            stderr=outcome.stderr.text(),
            returncode=None,
            duration=outcome.duration,
            message=f"Checker did not finish within {timeout:g} s and was killed.",
        )
    else:
        result = _interpret(
            outcome.returncode if outcome.returncode is not None else -1,
            outcome.stdout.text(),
            outcome.stderr.text(),
            outcome.duration,
            scores_text=outcome.stdout.tail_text(),
            limits=limits,
        )
    full = quotas_filled(outcome.report)
    if full:
        result.quota_full = full
        result.message += " The checker filled " + "; ".join(full) + "."
    result.sandbox, result.warning = mode, warning
    return result


def run_checker_on_archive_bytes(
    task_folder: str | Path,
    filename: str,
    data: bytes,
    timeout_s: float | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
) -> CheckerResult:
    """Run the checker on an uploaded workspace archive (extracted safely, then copied)."""
    name = Path(filename).name.lower()
    suffix = next((s for s in (".tar.gz", ".tgz", ".tar", ".zip") if name.endswith(s)), None)
    if suffix is None:
        raise ArchiveError(f"{filename}: upload a .zip, .tar.gz, .tgz or .tar workspace")
    with tempfile.TemporaryDirectory(prefix="clawviz-upload-") as tmp:
        archive = Path(tmp) / f"reference{suffix}"
        archive.write_bytes(data)
        return run_checker(task_folder, archive, timeout_s, settings=settings)


def _interpret(
    returncode: int,
    stdout: str,
    stderr: str,
    duration: float,
    *,
    scores_text: str | None = None,
    limits: sandbox.Limits | None = None,
) -> CheckerResult:
    obj = last_score_object(stdout if scores_text is None else scores_text)
    scores = _numeric_scores(obj) if obj else {}
    # Each term divided first: the mean of finite scores stays finite (1e308 + 1e308 is inf).
    reward = sum(v / len(scores) for v in scores.values()) if scores else None
    result = CheckerResult(
        "ok", scores, reward, stdout, stderr, returncode, duration, "Checker finished."
    )
    if returncode != 0:
        # A crash counts no reward, whatever the checker printed before it failed.
        result.scores, result.reward = {}, None
        result.status = "crash"
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no stderr"
        result.message = f"Checker exited with code {returncode}: {last}"
        if returncode < 0 and limits is not None:
            sig = signal.Signals(-returncode)
            why = {
                signal.SIGXCPU: f"CPU limit of {limits.cpu_seconds} s",
                signal.SIGXFSZ: f"file size limit of {limits.file_bytes} bytes",
                signal.SIGKILL: "killed (memory or process limit)",
            }.get(sig)
            if why:
                result.message += f" ({why})"
    elif obj is None:
        result.status = "bad_output"
        result.message = (
            "Checker printed no JSON object of sub-scores on stdout (one whose values are "
            "all numeric: numbers or booleans)."
        )
    else:
        result.message = f"{len(scores)} checks, reward {reward:.3f}."
    return result
