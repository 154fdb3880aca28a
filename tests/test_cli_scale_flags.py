"""The scale-out flags `ingest`, `analyse` and `export` share (cli.common.add_scale_out): the
same refusals, in one line and exit 1, before any work."""

from __future__ import annotations

import pytest

from clawviz.cli.main import main as cli_main


@pytest.mark.parametrize(
    "command",
    [
        ["ingest", "sample_logs"],
        ["analyse"],
        ["export", "--format", "sft", "--out", "parts"],
    ],
    ids=["ingest", "analyse", "export"],
)
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (["--workers", "-3"], "--workers must be at least 1"),
        (["--ray-address", "ray://h:10001"], "--ray-address needs --engine ray"),
    ],
    ids=["zero", "negative", "address-without-ray"],
)
def test_bad_scale_out_flags_are_one_line_and_exit_1(command, flags, message, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'store.db'}"
    assert cli_main(["--db", db, *command, *flags]) == 1
    err = capsys.readouterr().err
    assert err.strip() == f"error: {message}"
    if command[0] == "ingest":
        assert not (tmp_path / "store.db").exists()  # refused before the store is opened
