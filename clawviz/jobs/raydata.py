"""`ingest --engine ray`: files read through the pyarrow filesystems, and the job's Ray Data
stage.

Every exchange log of an `--engine ray` ingest is read by its task through
`pyarrow.fs.FileSystem.from_uri`: a local path as its `file://` URL, or any URL pyarrow
understands (`s3://`, `gs://`, `hdfs://`, ...) by the same code. The task copies the file's
bytes to its own local disk (`stage`, one file at a time), fingerprints them there when the
driver could not (a remote file: the driver never reads its bytes), and parses the copy with
the ordinary reader (`clawviz.jobs.ingest.ExchangeParse`: gzip, bounded lines, rejected lines
by file and line).

A folder URL is listed through the same filesystem (`list_logs`): its `.jsonl` and
`.jsonl.gz` files, hidden names left out, in the order a local folder is walked (a folder's
files by name before its sub-folders), so a remote tree loads in the order the same tree does
from a local path. Only exchange logs are read remotely in the tasks; a remote results file or
transcript is copied to the driver and loaded there (`stage`), as a local one is.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

LOG_SUFFIXES = (".jsonl", ".jsonl.gz")
COPY_BYTES = 8 << 20
"""Bytes per read when a file is copied from its filesystem."""


def is_url(given: str) -> bool:
    """A URL for the pyarrow filesystems (`scheme://...`), not a local path."""
    scheme = urlsplit(given).scheme
    return "://" in given and len(scheme) > 1


def is_remote(given: str) -> bool:
    """A URL that is not `file://` (read only through pyarrow)."""
    return is_url(given) and urlsplit(given).scheme != "file"


def url_of(path: str | Path) -> str:
    """The URL a task reads: a URL as given, a local path as its `file://` URL."""
    text = str(path)
    return text if is_url(text) else Path(text).resolve().as_uri()


def display_of(url: str) -> str:
    """What a file is called in reports and in the store: a `file://` URL's path (so the store
    matches an ingest of the local path), any other URL as given."""
    return unquote(urlsplit(url).path) if urlsplit(url).scheme == "file" else url


def _filesystem(url: str) -> tuple[Any, str]:
    from pyarrow import fs

    return fs.FileSystem.from_uri(url)


def _walk_key(rel: str) -> tuple[tuple[int, str], ...]:
    """os.walk's top-down order with sorted names: a folder's files, then its sub-folders."""
    parts = rel.split("/")
    return (*((1, d) for d in parts[:-1]), (0, parts[-1]))


def list_logs(url: str) -> list[tuple[str, int]]:
    """(URL, size) of the exchange-log files at `url` (a file, or a folder listed recursively);
    FileNotFoundError if nothing is there."""
    from pyarrow import fs

    filesystem, root = _filesystem(url)
    info = filesystem.get_file_info(root)
    if info.type == fs.FileType.NotFound:
        raise FileNotFoundError(f"{url}: no such file or folder")
    if info.type == fs.FileType.File:
        return [(url, int(info.size or 0))]
    base = url.rstrip("/")
    prefix = root.rstrip("/") + "/"
    found: list[tuple[str, int]] = []
    for item in filesystem.get_file_info(fs.FileSelector(root, recursive=True)):
        rel = item.path[len(prefix) :] if item.path.startswith(prefix) else item.base_name
        if item.type != fs.FileType.File or not item.base_name.endswith(LOG_SUFFIXES):
            continue
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        found.append((rel, int(item.size or 0)))
    found.sort(key=lambda f: _walk_key(f[0]))
    return [(f"{base}/{quote(rel)}", size) for rel, size in found]


def copy_to(url: str, dest: Path) -> int:
    """Copy the file at `url` to `dest` through its filesystem; returns the bytes copied."""
    filesystem, path = _filesystem(url)
    n = 0
    with filesystem.open_input_stream(path, compression=None) as src, dest.open("wb") as out:
        while True:
            chunk = src.read(COPY_BYTES)
            if not chunk:
                return n
            out.write(chunk)
            n += len(chunk)


@contextmanager
def stage(url: str) -> Iterator[Path]:
    """The file at `url` as a local file, under its own name (its suffix says gzip or not),
    removed afterwards."""
    folder = tempfile.mkdtemp(prefix="clawviz-stage-")
    try:
        name = os.path.basename(urlsplit(url).path.rstrip("/")) or "log.jsonl"
        dest = Path(folder) / unquote(name)
        copy_to(url, dest)
        yield dest
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def dataset(ray: Any, items: list[dict[str, Any]]) -> Any:
    """A Ray Data dataset of `items`, one block each (one task per item), with Ray Data's
    progress bars and its INFO and WARNING lines off (its errors still show): the command
    reports progress as a single process does."""
    import logging

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray.data.from_items(items, override_num_blocks=max(1, len(items)))


TASK_RETRIES = 2
"""How often Ray runs a task again whose worker died (a task's own error is its answer)."""


def map_retried(ds: Any, fn: Any) -> Any:
    """`ds.map(fn)` with one CPU per task and at most `TASK_RETRIES` retries.

    Ray Data's own default retries a task whose worker dies without end, so a file that kills
    its reader would never finish. Ray 2.60 has no named parameter for it: `max_retries` goes
    through `**ray_remote_args`, which warns that it is removed in Ray 2.64. requirements-ray.txt
    therefore stops below 2.64, and that one warning is silenced here (and only here); the
    retry is what `tests/test_ray_data.py`'s killed-task test relies on."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`ray_remote_args` is deprecated")
        return ds.map(fn, num_cpus=1, max_retries=TASK_RETRIES)


def ingest_rows(jobs: list[Any], ray: Any, run_row: Any) -> Iterator[tuple[int, Any]]:
    """The exchange logs of one ingest as a Ray Data job: one row per file, mapped by
    `run_row` (`clawviz.jobs.pool.run_row`, given: pool imports this module) with one CPU
    each. A task whose worker dies is retried by Ray, and a file is one keyed transaction, so a
    retry never doubles a row. Yields (target index, its `Done`) as files finish, in any order."""
    ds = dataset(
        ray,
        [
            {"index": j.index, "job": pickle.dumps(j, protocol=pickle.HIGHEST_PROTOCOL)}
            for j in jobs
        ],
    )
    for row in map_retried(ds, run_row).iter_rows():
        done = pickle.loads(row["done"])  # noqa: S301 - our own task's answer
        yield done.index, done
