"""Errors a user can act on: what is wrong, where (file and record), and what to do.

The CLI prints these as one line instead of a traceback; library callers catch them by type.
"""

from __future__ import annotations


class DataError(ValueError):
    """A data file or record is unusable; the message names the file and the record
    (line, member, episode) and what was expected there."""


class UnknownArgumentError(TypeError):
    """`gym.make` got a keyword its env does not take; the message names the nearest valid one.

    gymnasium re-raises a creator's TypeError as `type(error)(f"{error} was raised from the
    environment creator for ID with kwargs (...)")`, which would show the registry's internal
    arguments to the user; this type keeps only its own message."""

    def __init__(self, message: str):
        super().__init__(message.split(" was raised from the environment creator")[0])


class DownloadError(OSError):
    """A download failed (no network, a hub blocked by HF_HUB_OFFLINE, a missing file on the
    server); the message says what to do instead, e.g. where to copy the files by hand."""
