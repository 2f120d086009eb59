"""Tokenizers of the world models: any Hugging Face tokenizer, or the embedded one we ship.

The embedded tokenizer (`rlvr_envs/assets/tokenizers/minitextworld/`) is a small byte-level
BPE trained with the `tokenizers` library on generated MiniTextWorld text
(`python -m trainers.tokenizer`), so the language envs run with no download.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from rlvr_envs.core.paths import ASSETS

EMBEDDED_DIR = ASSETS / "tokenizers"
EMBEDDED = {"minitextworld": EMBEDDED_DIR / "minitextworld", "miniweb": EMBEDDED_DIR / "miniweb"}
DEFAULT_TOKENIZER = "minitextworld"


def load_tokenizer(spec: Any = None):
    """A tokenizer from `spec`: None (the embedded default), an embedded name, a local
    path or hub name for `AutoTokenizer`, or an already-built tokenizer object."""
    if spec is None:
        spec = DEFAULT_TOKENIZER
    if not isinstance(spec, (str, Path)):
        return spec
    if importlib.util.find_spec("torch") is None:  # the core install: tokenizers need no torch, so no advice
        os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from transformers import AutoTokenizer

    from rlvr_envs.core.files import check_checkpoint_dir

    if str(spec) in EMBEDDED:
        path = EMBEDDED[str(spec)]
        if not (path / "tokenizer.json").exists():
            raise FileNotFoundError(
                f"the embedded tokenizer {spec!r} is missing at {path}; rebuild it with `python -m trainers.tokenizer`"
            )
        check_checkpoint_dir(path, f"the embedded tokenizer {spec!r}", "rebuild it with `python -m trainers.tokenizer`")
        return AutoTokenizer.from_pretrained(str(path))
    from rlvr_envs.core.errors import DownloadError

    choices = f"pass a local directory, a hub name that is cached (HF_HUB_OFFLINE=1 forbids downloads), or one of " \
              f"the embedded tokenizers {sorted(EMBEDDED)}"
    path = Path(spec).expanduser()
    if path.is_dir():
        check_checkpoint_dir(spec, "the tokenizer", "copy the tokenizer directory again from where it came from")
    elif path.exists():
        raise FileNotFoundError(f"tokenizer={spec}: is a file; {choices}")
    elif str(spec).startswith(("/", ".", "~")) or str(spec).count("/") > 1:  # a path, not a hub name
        raise FileNotFoundError(f"tokenizer={spec}: no such folder; {choices}")
    try:
        return AutoTokenizer.from_pretrained(str(spec))
    except (OSError, ValueError) as exc:  # one line, not the hub client's chained tracebacks
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise DownloadError(f"could not load tokenizer {str(spec)!r} ({reason}): {choices}") from None
