"""Text baselines: the "nothing changes" answer.

Most game actions change nothing, so predicting the current state again is right on every
unchanged transition (about 58% of MiniTextWorld's held-out set) and wrong on every changed
one. Accuracy on changed transitions is therefore the number that shows a model learned
the game; this baseline is what "learned nothing" scores.
"""

from __future__ import annotations

from collections.abc import Sequence


def nothing_changes(task, indices: Sequence[int]) -> list:
    """The verifier's results for the "nothing changes" answer (`task.unchanged_answer`) on `indices`."""
    return task.verify_text(list(indices), [task.unchanged_answer(int(i)) for i in indices])
