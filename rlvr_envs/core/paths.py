"""Where files live: the data root of external datasets, and the assets shipped inside the package."""

from __future__ import annotations

import os
from pathlib import Path


def data_root(data_dir: str | os.PathLike | None = None) -> Path:
    """The data root: the argument, else `$RLVR_WORLD_DATA`, else `~/.cache/rlvr_world`."""
    root = data_dir or os.environ.get("RLVR_WORLD_DATA") or Path.home() / ".cache" / "rlvr_world"
    return Path(root).expanduser()


#: the models, tokenizers and embedded data shipped inside the package (`rlvr_envs/assets/`)
ASSETS = Path(__file__).resolve().parents[1] / "assets"
