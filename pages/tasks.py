"""Tasks page: the review queue with the difficulty filter, and one task's detail and sign-off.

Deep link: ?task=<task id>. Layout only; the queue and the detail are `clawviz.ui.tasks`.
"""

from __future__ import annotations

from clawviz.ui import state
from clawviz.ui.pages import run_page
from clawviz.ui.tasks import detail_view, queue_view


def main() -> None:
    task_id = state.get_param(state.QP_TASK)
    if task_id:
        detail_view(task_id)
    else:
        queue_view()


run_page(__file__, main)
