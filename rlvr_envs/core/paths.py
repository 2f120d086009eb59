"""Where external datasets live: one data root for every domain."""

from __future__ import annotations

import os
from pathlib import Path


def data_root(data_dir: str | os.PathLike | None = None) -> Path:
    """The data root: the argument, else `$RLVR_WORLD_DATA`, else `~/.cache/rlvr_world`."""
    root = data_dir or os.environ.get("RLVR_WORLD_DATA") or Path.home() / ".cache" / "rlvr_world"
    return Path(root).expanduser()
