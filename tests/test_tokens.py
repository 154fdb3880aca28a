"""Token alignment of a kept path (PIPELINE §6)."""

from __future__ import annotations

from recon_helpers import Ep, with_rollout

from clawviz.recon.tokens import align_path


def path(*turns):
    """turns: (prompt_ids, output_ids) per call."""
    e = Ep()
    calls = e.chain(len(turns))
    for c, (p, o) in zip(calls, turns, strict=True):
        with_rollout(
            c,
            prompt_token_ids=p,
            output_token_ids=o,
            output_logprobs=[-0.1 * (i + 1) for i in range(len(o))],
        )
    return calls


def test_clean_append_is_one_row_with_masks_and_logprobs():
    calls = path(([1, 2], [3, 4]), ([1, 2, 3, 4, 5, 6], [7]), ([1, 2, 3, 4, 5, 6, 7, 8], [9]))
    al = align_path(calls)
    assert len(al.rows) == 1 and not al.splits and not al.missing
    row = al.rows[0]
    assert row.tokens == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert row.mask == [0, 0, 1, 1, 0, 0, 1, 0, 1]
    assert row.logprobs[2:4] == [-0.1, -0.2] and row.logprobs[0] is None
    assert row.n_trained == 4 and row.n_context == 5
    assert row.call_ids == [c.call_id for c in calls]


def test_retoken_drift_inside_last_output_splits():
    # The harness re-rendered output [3, 4] as [34]: a BPE merge.
    al = align_path(path(([1, 2], [3, 4]), ([1, 2, 34, 5], [6])))
    assert [r.split_reason for r in al.rows] == ["retoken", None]
    assert al.rows[0].split_at == 2
    assert al.splits == {"retoken": 1}
    assert al.rows[1].tokens == [1, 2, 34, 5, 6] and al.rows[1].mask == [0, 0, 0, 0, 1]


def test_template_drift_in_context_and_earlier_output_drift():
    al = align_path(path(([1, 2], [3]), ([1, 9, 3, 5], [6])))
    assert al.splits == {"template": 1}
    al = align_path(path(([1], [2]), ([1, 2, 5], [6]), ([1, 7, 5, 6, 8], [9])))
    assert al.splits == {"other": 1}


def test_calls_without_token_ids_are_reported():
    calls = path(([1], [2]), ([1, 2, 3], [4]))
    calls[1].rollout = None
    al = align_path(calls)
    assert al.missing == [calls[1].call_id]
    assert len(al.rows) == 1 and al.rows[0].tokens == [1, 2]
