"""Streaming row writers: JSONL (one orjson line per row) or Parquet (one row group per batch).

Rows go to `FILE.partial` and the file is renamed into place only when the export finishes,
so an interrupted export never leaves a file that looks complete. Parquet columns have fixed
types (docs/EXPORT.md); `tools` is a JSON string there, since tool schemas are free-form JSON.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

PARQUET_BATCH = 256
"""Most rows per Parquet row group."""

PARQUET_CELLS = 1_000_000
"""Most buffered list cells (tokens, or message characters / 8) before a row group is written:
RL rows of 20K tokens would otherwise hold 256 x 4 lists of 20K Python objects."""


def _cells(row: dict[str, Any]) -> int:
    if "input_ids" in row:
        return 4 * len(row["input_ids"])
    return (
        len(row.get("messages") or ())
        + sum(len(m.get("content") or "") for m in row.get("messages") or ()) // 8
    )


def _parquet_schema(fmt: str) -> Any:
    import pyarrow as pa

    common = [
        ("format", pa.string()),
        ("row_id", pa.string()),
        ("episode_id", pa.string()),
        ("task_id", pa.string()),
        ("harness", pa.string()),
        ("model", pa.string()),
        ("attempt", pa.int64()),
        ("group", pa.string()),
        ("segment", pa.int64()),
        ("path_id", pa.string()),
        ("status", pa.string()),
        ("reasons", pa.list_(pa.string())),
        ("reward", pa.float64()),
        ("advantage", pa.float64()),
        ("settings_hash", pa.string()),
        ("call_ids", pa.list_(pa.string())),
        ("prefix_id", pa.string()),
    ]
    if fmt == "sft":
        tool_call = pa.struct(
            [
                ("id", pa.string()),
                ("type", pa.string()),
                ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
            ]
        )
        message = pa.struct(
            [
                ("role", pa.string()),
                ("content", pa.string()),
                ("reasoning_content", pa.string()),
                ("tool_calls", pa.list_(tool_call)),
                ("tool_call_id", pa.string()),
            ]
        )
        extra = [
            ("messages", pa.list_(message)),
            ("tools", pa.string()),
            ("train", pa.list_(pa.bool_())),
            ("prefix_messages", pa.int64()),
            ("split", pa.int64()),
            ("n_splits", pa.int64()),
        ]
    else:
        extra = [
            ("split", pa.int64()),
            ("n_splits", pa.int64()),
            ("drift_reason", pa.string()),
            ("advantage_kind", pa.string()),
            ("input_ids", pa.list_(pa.int64())),
            ("loss_mask", pa.list_(pa.int8())),
            ("rollout_logprobs", pa.list_(pa.float64())),
            ("token_advantages", pa.list_(pa.float64())),
            ("policy_versions", pa.list_(pa.int64())),
        ]
    return pa.schema(common + extra)


class RowWriter:
    """Writes rows of one format to JSONL or Parquet (chosen by the file's suffix)."""

    def __init__(self, path: str | os.PathLike[str], fmt: str) -> None:
        self.path = Path(path)
        self.fmt = fmt
        self.parquet = self.path.suffix.lower() == ".parquet"
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.n_rows = 0
        self._buf: list[dict[str, Any]] = []
        self._cells = 0
        self._file: Any = None
        self._pq: Any = None
        if self.parquet:
            import pyarrow.parquet as pq

            self._schema = _parquet_schema(fmt)
            self._pq = pq.ParquetWriter(self.partial, self._schema, compression="zstd")
        else:
            self._file = open(self.partial, "wb")  # noqa: SIM115 - closed in close()/abort()

    def write(self, row: dict[str, Any]) -> None:
        self.n_rows += 1
        if self._file is not None:
            self._file.write(orjson.dumps(row) + b"\n")
            return
        if self.fmt == "sft":
            row = {**row, "tools": orjson.dumps(row["tools"]).decode()}
        self._buf.append(row)
        self._cells += _cells(row)
        if len(self._buf) >= PARQUET_BATCH or self._cells >= PARQUET_CELLS:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        import pyarrow as pa

        self._pq.write_table(pa.Table.from_pylist(self._buf, schema=self._schema))
        self._buf = []
        self._cells = 0

    def close(self) -> int:
        """Finish the file and move it into place; returns its size in bytes."""
        if self._file is not None:
            self._file.close()
        else:
            self._flush()
            self._pq.close()
        os.replace(self.partial, self.path)
        return self.path.stat().st_size

    def abort(self) -> None:
        """Drop the partial file (an export that failed or was cancelled)."""
        try:
            if self._file is not None:
                self._file.close()
            elif self._pq is not None:
                self._pq.close()
        finally:
            self.partial.unlink(missing_ok=True)
