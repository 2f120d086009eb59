"""Errors a user can act on: what is wrong, where (file and record), and what to do.

The CLI prints these as one line instead of a traceback; library callers catch them by type.
"""

from __future__ import annotations


class DataError(ValueError):
    """A data file or record is unusable; the message names the file and the record
    (line, member, episode) and what was expected there."""


class DownloadError(OSError):
    """A download failed (no network, a hub blocked by HF_HUB_OFFLINE, a missing file on the
    server); the message says what to do instead, e.g. where to copy the files by hand."""
