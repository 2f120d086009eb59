"""Actions checked at the door: the one place every env (token envs, their batched vector env,
the learned and real simulators) turns a policy's action into an array or refuses it.

Error types, the same everywhere:
- `TypeError`: not numbers of the right kind: None, strings, bools, complex numbers, objects,
  a ragged nested sequence, a masked array (its mask would be silently ignored), floats where
  token ids are due;
- `ValueError`: numbers of the wrong shape (a 2-D array where a 1-D response is due, two
  values where one token is due, a batch of the wrong size).
A silent cast or flatten would hide a policy bug, so nothing is coerced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def as_array(action: Any, what: str, kind: str = "numbers") -> np.ndarray:
    """`action` as a numpy array, refusing what no numeric array can honestly represent;
    `kind` says what was due (for the message)."""
    if action is None:
        raise TypeError(f"{what} must be {kind}, got None")
    if isinstance(action, np.ma.MaskedArray):
        raise TypeError(f"{what} is a masked array, whose mask would be ignored: pass a plain array "
                        "(e.g. `action.filled(pad_id)`)")
    if isinstance(action, (str, bytes)):
        raise TypeError(f"{what} must be {kind}, got {type(action).__name__} {action[:40]!r}")
    if type(action).__module__ == "torch" and hasattr(action, "detach"):  # a tensor, any device or dtype
        action = action.detach().cpu()
        if str(action.dtype) == "torch.bfloat16":  # numpy has no bfloat16 (it called the tensor ragged)
            action = action.float()
    try:
        return np.asarray(action)
    except (ValueError, TypeError):  # numpy refuses ragged nesting ("inhomogeneous shape")
        raise TypeError(f"{what} must be a rectangular array of {kind}, got a ragged {type(action).__name__}") \
            from None


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class IndexOutOfRange(IndexError, ValueError):
    """An index outside its range: an IndexError to sequence code, a bad value to argument checks."""


def reset_options(options: Any, known: tuple[str, ...]) -> dict[str, Any]:
    """`reset`'s options as a dict, the same rules on every id: None is {}; anything but a mapping
    is `TypeError`, and a key outside `known` is `ValueError` naming the known ones (a typo such
    as {"idx": 3} would otherwise reset onto a random transition, silently)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict such as {{{known[0]!r}: ...}}, got {type(options).__name__}")
    unknown = sorted(map(str, set(options) - set(known)))
    if unknown:
        raise ValueError(f"unknown reset option(s) {unknown}; this env takes {list(known)}")
    return dict(options)


def transition_index(value: Any, size: int, what: str = "options['index']") -> int:
    """A transition index as given to `reset`: a Python or numpy integer in [0, size); a float
    (1.9), a string ("3") or a bool is refused, never truncated or parsed."""
    if not _is_int(value):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}")
    if not 0 <= int(value) < size:
        raise IndexOutOfRange(f"{what} {value} is outside the {size} transitions [0, {size})")
    return int(value)


def integer_array(action: Any, what: str, limit: int | None = None) -> np.ndarray:
    """`action` as a 1-D integer array (its first `limit` values), refusing anything that
    is not a scalar or 1-D sequence of integer token ids (module doc for the error types).

    Python ints too large for int64 arrive as object arrays and are kept exact (and checked
    one by one, so only the `limit` values that count are checked).
    """
    if isinstance(action, (list, tuple)) and bool in set(map(type, action[:limit])):
        # numpy reads [1, True] as the integers [1, 1]: a bool is no token id (an ndarray of them is dtype bool)
        raise TypeError(f"{what} must hold integer token ids, got a bool among them")
    array = as_array(action, what, "integer token ids")
    if array.ndim > 1:
        raise ValueError(f"{what} must be a scalar or a 1-D sequence of token ids, got shape {array.shape}")
    tokens = array.reshape(-1)[:limit]
    if tokens.dtype.kind == "f" and not isinstance(action, np.ndarray):
        # numpy turns a list mixing small ints with ints of 2**63 or more into floats: keep them exact
        exact = np.asarray(action, dtype=object).reshape(-1)[:limit]
        if all(_is_int(t) for t in exact):
            tokens = exact
    if tokens.dtype.kind == "O":
        if not all(_is_int(t) for t in tokens):
            raise TypeError(f"{what} must hold integer token ids, got {[type(t).__name__ for t in tokens[:3]]}")
        return tokens
    if tokens.size and tokens.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integer token ids, got dtype {tokens.dtype}")
    return tokens


def token_from_action(action: Any) -> int:
    """The token id of a token-mode action: an integer scalar or a size-1 integer array."""
    tokens = integer_array(action, "a token-mode action")
    if tokens.size != 1:
        raise ValueError(f"a token-mode action is one token id, got {tokens.size} values")
    return int(tokens[0])


def real_array(action: Any, what: str) -> np.ndarray:
    """`action` as a float64 array of real numbers (ints or floats; NaN and inf pass, for the
    caller's repair-or-reject policy); bools, complex numbers, strings and objects are refused."""
    array = as_array(action, what, "real numbers")
    if array.dtype.kind not in "iuf":
        kind = {"b": "bools", "c": "complex numbers", "U": "strings", "S": "bytes"}.get(array.dtype.kind,
                                                                                      f"dtype {array.dtype}")
        raise TypeError(f"{what} must be real numbers (ints or floats), got {kind}")
    return array.astype(np.float64)


def action_batch(actions: Any, num_envs: int) -> Any:
    """The per-env actions of a vector env's `step`: a sequence or array of `num_envs` of them."""
    if actions is None or isinstance(actions, (str, bytes, dict)) or not hasattr(actions, "__len__"):
        raise TypeError(f"a vector env's step takes a batch of {num_envs} actions (an array or sequence), "
                        f"got {type(actions).__name__}")
    if isinstance(actions, np.ma.MaskedArray):
        raise TypeError("the actions are a masked array, whose mask would be ignored: pass a plain array")
    if isinstance(actions, np.ndarray) and actions.ndim == 0:
        raise ValueError(f"expected {num_envs} actions, got a scalar")
    if len(actions) != num_envs:
        raise ValueError(f"expected {num_envs} actions, got {len(actions)}")
    return actions
