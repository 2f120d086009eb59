"""Uniform action discretisation: 256 bins per dimension, as the RT-1 video world model uses.

Each action dimension d with range [low_d, high_d] is cut into `num_bins` equal bins;
a value maps to the bin it falls in (values outside the range are clipped first) and a
bin decodes to its centre, so decode(encode(x)) is within half a bin width of x for any x
inside the range. Ranges come either from data (`ActionBins.from_data`, per-dimension
min/max) or from a ranges file like RLVR-World's published RT-1 ranges
(`../shared/data/rt1/frac_action_ranges.json`: "values" [[min, max], ...] per dimension,
dimensions in alphabetical RLDS key order).

A dimension whose range is a single value (low == high) has one meaningful value; every
input encodes to bin 0 and decodes to that value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rlvr_envs.core.errors import DataError

DEFAULT_NUM_BINS = 256


@dataclass(frozen=True)
class ActionBins:
    """Per-dimension uniform bins. `low`, `high`: float64 [D]; `num_bins` bins each."""

    low: np.ndarray
    high: np.ndarray
    num_bins: int = DEFAULT_NUM_BINS
    names: tuple[str, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "low", np.asarray(self.low, dtype=np.float64).reshape(-1))
        object.__setattr__(self, "high", np.asarray(self.high, dtype=np.float64).reshape(-1))
        self.validate()

    def validate(self) -> "ActionBins":
        if self.low.shape != self.high.shape or self.low.size == 0:
            raise ValueError(f"low/high must be equal-length non-empty vectors; got {self.low.shape}, {self.high.shape}")
        finite = np.isfinite(self.low) & np.isfinite(self.high)
        if not finite.all():
            dim = int(np.argmin(finite))
            raise ValueError(f"dimension {dim}: range [{self.low[dim]}, {self.high[dim]}] is not finite")
        if (self.high < self.low).any():
            dim = int(np.argmax(self.high < self.low))
            raise ValueError(f"dimension {dim}: high {self.high[dim]} < low {self.low[dim]}")
        if not 2 <= self.num_bins <= 65536:
            raise ValueError(f"num_bins must be in [2, 65536]; got {self.num_bins}")
        if self.names is not None and len(self.names) != self.low.size:
            raise ValueError(f"{len(self.names)} names for {self.low.size} dimensions")
        return self

    @property
    def dim(self) -> int:
        return int(self.low.size)

    @property
    def bin_width(self) -> np.ndarray:
        return (self.high - self.low) / self.num_bins

    @classmethod
    def from_data(cls, actions: np.ndarray, num_bins: int = DEFAULT_NUM_BINS, names=None) -> "ActionBins":
        """Ranges = per-dimension min and max of `actions` [..., D]."""
        actions = np.asarray(actions, dtype=np.float64)
        flat = actions.reshape(-1, actions.shape[-1])
        if flat.shape[0] == 0 or not np.isfinite(flat).all():
            raise ValueError("actions must be non-empty and finite to derive ranges")
        return cls(flat.min(axis=0), flat.max(axis=0), num_bins, None if names is None else tuple(names))

    @classmethod
    def from_ranges_file(cls, path: str | os.PathLike, num_bins: int = DEFAULT_NUM_BINS) -> "ActionBins":
        """Ranges from a JSON file with "values": [[min, max], ...] (and optional row names).

        A broken file raises `DataError` naming the file and the row or field at fault.
        """
        from rlvr_envs.core.files import read_json

        if not 2 <= num_bins <= 65536:
            raise ValueError(f"num_bins must be in [2, 65536]; got {num_bins}")
        path = Path(path)
        data = read_json(path, "the action ranges file")
        if not isinstance(data, dict) or not isinstance(data.get("values"), list) or not data["values"]:
            raise DataError(f"{path}: expected an object with a non-empty 'values' list of [min, max] rows")
        for row, pair in enumerate(data["values"]):
            if (not isinstance(pair, list) or len(pair) != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)):
                raise DataError(f"{path}: 'values' row {row} is {pair!r}, expected [min, max] numbers")
        values = np.asarray(data["values"], dtype=np.float64)
        names = data.get("row_names_inferred_alphabetical_tfds_key_order") or data.get("names")
        if names is not None and not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise DataError(f"{path}: row names must be a list of strings; got {names!r}")
        try:
            return cls(values[:, 0], values[:, 1], num_bins, None if names is None else tuple(names))
        except ValueError as error:  # finite, ordered, one name per row: say which file
            raise DataError(f"{path}: {error}") from error

    def encode(self, actions: np.ndarray) -> np.ndarray:
        """Bin ids int64 [..., D] of `actions` [..., D] (clipped to the range first)."""
        actions = np.asarray(actions, dtype=np.float64)
        if actions.shape[-1:] != (self.dim,):
            raise ValueError(f"actions must end in dimension {self.dim}; got shape {actions.shape}")
        if not np.isfinite(actions).all():
            raise ValueError("cannot bin non-finite actions")
        span = self.high - self.low
        safe_span = np.where(span > 0, span, 1.0)
        scaled = (np.clip(actions, self.low, self.high) - self.low) / safe_span * self.num_bins
        bins = np.minimum(np.floor(scaled), self.num_bins - 1).astype(np.int64)
        return np.where(span > 0, bins, 0)

    def decode(self, bins: np.ndarray) -> np.ndarray:
        """Bin centres float64 [..., D] of bin ids [..., D]."""
        bins = np.asarray(bins)
        if bins.shape[-1:] != (self.dim,):
            raise ValueError(f"bins must end in dimension {self.dim}; got shape {bins.shape}")
        if (bins < 0).any() or (bins >= self.num_bins).any():
            raise ValueError(f"bin ids must lie in [0, {self.num_bins}); got [{bins.min()}, {bins.max()}]")
        return self.low + (bins.astype(np.float64) + 0.5) * self.bin_width
