"""Run a task's checker (untrusted code) on a workspace, in a separate process with a time limit.

ClawGym convention (`reward/check.py`): `python check.py <workspace>` prints a JSON object of
named sub-scores; `reward.sh` averages them. Here the checker runs on a temporary copy of the
workspace (cwd = that copy), in its own process group with a minimal environment, and the whole
group is killed when the time limit passes. It never runs inside the app process.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clawviz.review.archive import ArchiveError, open_workspace
from clawviz.settings import DEFAULT_SETTINGS, Settings

CheckerStatus = Literal["ok", "timeout", "crash", "bad_output"]
_MAX_CAPTURE = 1_000_000


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
    decoder = json.JSONDecoder()
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    # Walk back over lines that open an object; the last complete object wins.
    for i in range(len(lines) - 1, -1, -1):
        stripped = lines[i].lstrip()
        if not stripped.startswith("{"):
            continue
        start = offsets[i] + len(lines[i]) - len(stripped)
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(obj, dict) and not text[end:].strip().startswith(("}", "]", ",")):
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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _clip(text: str) -> str:
    if len(text) <= _MAX_CAPTURE:
        return text
    return text[:_MAX_CAPTURE] + f"\n… [{len(text) - _MAX_CAPTURE} more characters cut]"


def run_checker(
    task_folder: str | Path,
    workspace: str | Path,
    timeout_s: float | None = None,
    *,
    settings: Settings = DEFAULT_SETTINGS,
) -> CheckerResult:
    """Run `reward/check.py <copy of workspace>` in a child process and parse its sub-scores."""
    check_py = find_checker(task_folder)
    timeout = float(timeout_s if timeout_s is not None else settings.checker_timeout_s)
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-check-"))
    try:
        reward_dir = tmp / "reward"
        shutil.copytree(check_py.parent, reward_dir, symlinks=True)
        work = tmp / "workspace"
        with open_workspace(workspace, settings=settings) as folder:
            shutil.copytree(folder, work, symlinks=True)
        home = tmp / "home"
        home.mkdir()
        cmd = [sys.executable, str(reward_dir / check_py.name), str(work)]
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=work,
            env=_minimal_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return CheckerResult(
                "timeout",
                stdout=_clip(out.decode("utf-8", "replace")),
                stderr=_clip(err.decode("utf-8", "replace")),
                returncode=proc.returncode,
                duration=time.monotonic() - t0,
                message=f"Checker did not finish within {timeout:g} s and was killed.",
            )
        finally:
            # Children the checker left behind in its group must not outlive the run.
            if proc.returncode is not None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        duration = time.monotonic() - t0
        stdout = out.decode("utf-8", "replace")
        stderr = err.decode("utf-8", "replace")
        return _interpret(proc.returncode, _clip(stdout), _clip(stderr), duration)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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


def _interpret(returncode: int, stdout: str, stderr: str, duration: float) -> CheckerResult:
    obj = parse_scores(stdout)
    scores = _numeric_scores(obj) if obj else {}
    reward = sum(scores.values()) / len(scores) if scores else None
    result = CheckerResult(
        "ok", scores, reward, stdout, stderr, returncode, duration, "Checker finished."
    )
    if returncode != 0:
        result.status = "crash"
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no stderr"
        result.message = f"Checker exited with code {returncode}: {last}"
    elif obj is None:
        result.status = "bad_output"
        result.message = "Checker printed no JSON object of sub-scores on stdout."
    elif not scores:
        result.status = "bad_output"
        result.message = "Checker's JSON object holds no numeric sub-scores."
    else:
        result.message = f"{len(scores)} checks, reward {reward:.3f}."
    return result
