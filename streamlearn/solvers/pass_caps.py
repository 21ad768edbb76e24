"""Caps on the passes over the data an iterative solver may make, raised on small data.

A pass is a read of the data: on large data its cost is what a cap on the passes bounds.
On small data a pass costs little, while a solver's stopping rule may need as many passes
as on large data: PEGASOS's steps ``1 / (lam t)`` shrink by epochs, not rows, and Newton
steps at a small penalty overshoot for pass after pass whatever the number of rows.
:func:`pass_cap` raises a cap to the passes of :data:`ROW_PASSES` rows read, up to a
ceiling, so that fits on a few thousand rows meet their rules instead of warning at the
cap, and fits on large data keep the cap they had.
"""

from __future__ import annotations

#: Rows read (rows times passes) that a raised cap allows.
ROW_PASSES = 1_000_000


def pass_cap(n_rows: int, least: int, most: int) -> int:
    """The passes a solver may make over ``n_rows`` rows: ``ceil(ROW_PASSES / n_rows)``,
    at least ``least`` and at most ``most``.

    Parameters
    ----------
    n_rows : int
    least, most : int
        The cap on large data, and the most it is raised to.

    Returns
    -------
    int
    """
    raised = -(-ROW_PASSES // max(int(n_rows), 1))
    return int(min(max(raised, int(least)), max(int(most), int(least))))
