"""The two example policies of docs/recipes.md's Real2Sim section, importable by name.

The recipe's committed runs (`benchmarks/results/real2sim/recipe_*`) rank seven policies: the
built-in family (pixel expert at four noise levels, random) and these two, written in the recipe
as a user's `my_policy.py`. Comparing two learned simulators by that recipe's Pearson
(`rlvr-world adopt`) needs the same seven, so they live here too:
`--policy baselines.policies:toward_centre --policy baselines.policies:Circler`
(`tests/test_adopt.py` checks that they act as the recipe's code does).
"""

from __future__ import annotations

import numpy as np


def toward_centre(image: np.ndarray) -> np.ndarray:
    """A callable policy: every target at the arena's centre."""
    return np.tile([256.0, 256.0], (5, 1))


class Circler:
    """A SIMPLER-style policy: the agent circles the centre."""

    name = "circler"

    def reset(self, instruction: str) -> None:
        self.t = 0

    def step(self, image: np.ndarray) -> np.ndarray:
        self.t += 1
        angle = 0.3 * self.t + 0.06 * np.arange(5)
        return np.stack([256 + 150 * np.cos(angle), 256 + 150 * np.sin(angle)], axis=1)


#: the recipe's `--policy` specs for these two (beside the built-in family)
RECIPE_POLICIES = ("baselines.policies:toward_centre", "baselines.policies:Circler")
