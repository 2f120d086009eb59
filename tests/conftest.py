"""Test session setup: no model or dataset hub is reached (shared helpers: tests/samples.py)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# generated data (e.g. the embedded PushT held-out set) goes to a test-only data root, kept
# between runs so it is generated once per machine
os.environ.setdefault("RLVR_WORLD_DATA", os.path.join(tempfile.gettempdir(), "rlvr_world_test_data"))
