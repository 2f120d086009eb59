"""Optional dependencies: which extra installs what, and the one-line error when one is missing.

`pip install rlvr-world` serves the text and web ids and the TRL/verl reward functions;
the video ids, training and the web agent need extras. Code that reaches a feature's
heavy import wraps it in `needs_extra(...)`, so a user without the extra reads which one
to install instead of a bare `ModuleNotFoundError` from deep inside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

#: top-level module -> the extra that installs it (when no extra is named at the call)
EXTRA_OF = {
    "torch": "video", "torchvision": "video", "lpips": "video", "safetensors": "video", "PIL": "video",
    "imageio": "video", "imageio_ffmpeg": "video", "gym_pusht": "video", "pymunk": "video", "shapely": "video",
    "tfrecord": "video", "google": "video",
    "trl": "train", "peft": "train", "accelerate": "train", "datasets": "train", "stable_baselines3": "train",
    "matplotlib": "train",
    "openenv": "serve", "fastapi": "serve", "uvicorn": "serve", "websockets": "serve",
    "verifiers": "verifiers",
}


class MissingExtraError(ImportError):
    """A feature's optional dependency is not installed; the message names the extra to install."""


def missing_extra(exc: ModuleNotFoundError, feature: str, extra: str | None = None) -> MissingExtraError | None:
    """The one-line error for `exc`, or None when the missing module is not an optional dependency
    (a genuine bug, which must keep its traceback)."""
    module = (exc.name or "").split(".")[0]
    extra = extra if extra is not None and module in EXTRA_OF else EXTRA_OF.get(module)
    if extra is None:
        return None
    return MissingExtraError(f"{feature} needs the [{extra}] extra ({module} is not installed): "
                             f"pip install 'rlvr-world[{extra}]'")


@contextlib.contextmanager
def needs_extra(feature: str, extra: str | None = None) -> Iterator[None]:
    """Turn a missing optional dependency inside the block into `MissingExtraError` naming the extra."""
    try:
        yield
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, feature, extra)
        if error is None:
            raise
        raise error from None
