"""Shared test setup: offline hubs, the ../shared data samples, per-id test arguments."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data_or_skip(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the ../shared samples are not checked out here)")
    return path


def registry_test_kwargs(env_id: str) -> dict:
    """Arguments that make an id buildable here, or skip saying what is missing.

    Ids that need external data run on the real samples in ../shared/data when those exist.
    """
    from rlvr_envs.registration import entry

    if env_id.startswith("RLVRWorld/TextGame"):
        return {"data_dir": str(shared_data_or_skip().resolve()), "split": "test_sample"}
    if env_id.startswith("RLVRWorld/WebState"):
        return {"data_dir": real_wma_data_dir(), "split": "all"}
    available, hint = entry(env_id).availability()
    if not available:
        pytest.skip(f"{env_id}: external data absent here ({hint})")
    return {}


@functools.cache
def real_wma_data_dir() -> str:
    """A data root holding the two real WebArena transitions of ../shared as WMA JSONL."""
    from tests.test_web_state import real_records, write_jsonl

    root = Path(tempfile.mkdtemp(prefix="rlvr_wma_"))
    write_jsonl(root / "wma" / "real_pairs.jsonl", real_records())
    return str(root)
