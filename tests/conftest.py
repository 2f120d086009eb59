"""Test session setup: no model or dataset hub is reached (shared helpers: tests/samples.py)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# generated data (e.g. the embedded PushT held-out set) goes to a test-only data root, kept
# between runs so it is generated once per machine; one per pytest-xdist worker, so that two
# workers never generate the same folder at once (a second generator is refused its lock). The
# workers inherit the root the controlling process set here, so each adds its own suffix to it.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_DATA = os.environ.get("RLVR_WORLD_DATA") or os.path.join(tempfile.gettempdir(), "rlvr_world_test_data")
os.environ["RLVR_WORLD_DATA"] = _DATA + (f"-{_WORKER}" if _WORKER else "")
