"""Frames as an animated GIF, for results people would rather look at than read."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def save_gif(path: Path, rows: list[np.ndarray], fps: int = 2) -> None:
    """Frames side by side per time step ([T, H, W, 3] each, padded to the longest), upscaled 4x."""
    from PIL import Image

    length = max(len(r) for r in rows)
    padded = [np.concatenate([r, np.repeat(r[-1:], length - len(r), axis=0)]) for r in rows]
    frames = np.concatenate(padded, axis=2).repeat(4, axis=1).repeat(4, axis=2)
    images = [Image.fromarray(f) for f in frames]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
