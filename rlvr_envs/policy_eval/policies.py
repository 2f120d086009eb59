"""Policies for simulators, through one adapter, and a PushT family of graded quality.

`as_policy(obj)` turns any of these into a `Policy` with `reset(instruction)` and
`act(image) -> action`:
- a plain callable `image -> action`;
- a SIMPLER-style object with `reset(instruction)` and `step(image) -> action` (SIMPLER's
  policies return `(raw_action, action)`; a tuple's last element that is an array, or a
  dict's "action"/"world_vector" entry... is taken as the action: see `_action_of`);
- a Stable-Baselines3 model (`predict(obs, deterministic=True) -> (action, state)`).

`pusht_policy_family()` builds image-based PushT policies of graded quality: the scripted
expert driven by poses read from pixels (`video.pusht.judge`) at several noise levels, and a
random policy; each returns one chunk of 5 targets per frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rlvr_envs.video.pusht.physics import ARENA_SIZE


class Policy:
    """The adapted interface: `reset(instruction)`, then `act(image)` once per env step."""

    def __init__(self, name: str, act: Callable[[np.ndarray], Any], reset: Callable[[str], None] | None = None):
        self.name, self._act, self._reset = name, act, reset

    def reset(self, instruction: str = "") -> None:
        if self._reset is not None:
            self._reset(instruction)

    def act(self, image: np.ndarray) -> Any:
        return self._act(image)


def _action_of(output: Any) -> Any:
    if isinstance(output, dict):
        for key in ("action", "actions"):
            if key in output:
                return output[key]
        raise ValueError(f"a policy returned a dict without an 'action' key: {sorted(output)}")
    if isinstance(output, tuple):  # SIMPLER: (raw_action, action); SB3: (action, state)
        return output[-1] if isinstance(output[-1], (np.ndarray, list, dict)) else output[0]
    return output


def load_policy(spec: str) -> Policy:
    """The user's policy named `MODULE:NAME` (importable from the working directory): a callable
    `image -> action`, a SIMPLER-style object, or a class of either (built with no arguments),
    reported under NAME (or the object's own `name`). Bad specs raise ValueError in one line."""
    import importlib
    import os
    import sys

    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"--policy {spec!r}: expected MODULE:NAME, e.g. my_policies:greedy")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # a console script does not put the working directory on the path
    try:
        found = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ValueError(f"--policy {spec!r}: cannot import {module} ({exc}); run from the folder holding it or "
                         f"install it") from None
    except AttributeError:
        raise ValueError(f"--policy {spec!r}: {module} has no {attr}") from None
    except Exception as exc:  # the user's module fails while it is imported
        raise ValueError(f"--policy {spec!r}: importing {module} raised {_error_line(exc)}") from None
    home = getattr(found, "__module__", None) or type(found).__module__
    for name in (module, home):
        if name.partition(".")[0] in sys.stdlib_module_names | {"builtins", "__main__"}:
            raise ValueError(f"--policy {spec!r}: {attr} comes from Python's {name} module, not a policy of "
                             f"yours; name a function or class defined in your own module")
    if isinstance(found, type):
        try:
            found = found()
        except Exception as exc:
            raise ValueError(f"--policy {spec!r}: building {attr}() raised {_error_line(exc)}") from None
    try:
        return as_policy(found, name=getattr(found, "name", None) or attr)
    except TypeError as exc:
        raise ValueError(f"--policy {spec!r}: {exc}") from None


def _error_line(exc: BaseException) -> str:
    """An exception as one line: `ValueError: its first line`."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def as_policy(obj: Any, name: str | None = None) -> Policy:
    """Adapt a callable, a SIMPLER-style object or an SB3 model (see the module doc)."""
    if isinstance(obj, Policy):
        return obj
    label = name or getattr(obj, "name", None) or getattr(obj, "__name__", None) or type(obj).__name__
    if hasattr(obj, "predict") and not hasattr(obj, "step"):  # SB3
        return Policy(label, lambda image: obj.predict(image, deterministic=True)[0])
    if hasattr(obj, "step") and hasattr(obj, "reset"):  # SIMPLER
        _check_takes_an_image(obj.step, f"{label}.step")

        def act(image):
            output = obj.step(image)
            if isinstance(output, tuple) and len(output) == 2 and isinstance(output[1], dict):
                output = output[1]  # SIMPLER's (raw_action, action dict)
            return _action_of(output)
        return Policy(label, act, lambda instruction: obj.reset(instruction))
    if callable(obj):
        _check_takes_an_image(obj, label)
        return Policy(label, lambda image: _action_of(obj(image)))
    raise TypeError(f"cannot use {type(obj).__name__} as a policy: give a callable image -> action, an object "
                    "with reset(instruction) and step(image), or an SB3 model with predict(obs)")


def _check_takes_an_image(function: Any, label: str) -> None:
    """Refuse, before any rollout, a callable that cannot take one image (e.g. `os:getcwd`)."""
    import inspect

    try:
        inspect.signature(function).bind(None)
    except TypeError:
        raise TypeError(f"{label} cannot be called with one image: a policy is image -> action") from None
    except ValueError:  # no signature to read (some builtins): it is tried as it is
        pass


class PixelExpert:
    """The scripted PushT expert (`ScriptedPushExpert`) on poses read from the frame.

    Each call reads the agent and block pose from the image, asks the expert for
    `frame_skip` targets (advancing its phase machine), and returns them as one chunk. With
    `noise` > 0 Gaussian noise (px) is added to its targets, as in the dataset's noisy experts.
    """

    def __init__(self, noise: float = 0.0, seed: int = 0, frame_skip: int = 5, name: str | None = None):
        self.noise, self.seed, self.frame_skip = float(noise), int(seed), int(frame_skip)
        self.name = name or f"expert_noise{noise:g}"
        self.reset()

    def reset(self, instruction: str = "") -> None:
        from rlvr_envs.video.pusht.policies import ScriptedPushExpert

        self.rng = np.random.default_rng(self.seed)
        self.expert = ScriptedPushExpert(self.rng, self.noise)
        self.last = np.full(2, ARENA_SIZE / 2)

    def step(self, image: np.ndarray) -> np.ndarray:
        from rlvr_envs.video.pusht.judge import read_objects

        seen = read_objects(image)
        pose, agent = seen.block, seen.agent
        if pose is None or agent is None:  # nothing to push: hold still
            return np.tile(self.last if agent is None else agent, (self.frame_skip, 1))
        physics = np.zeros(10)
        physics[0:2], physics[4:7] = agent, pose
        targets = np.stack([self.expert(physics) for _ in range(self.frame_skip)])
        self.last = targets[-1]
        return targets.astype(np.float64)


class RandomPolicy:
    """Uniform random targets in the arena, one chunk per frame."""

    def __init__(self, seed: int = 0, frame_skip: int = 5, name: str = "random"):
        self.seed, self.frame_skip, self.name = int(seed), int(frame_skip), name
        self.reset()

    def reset(self, instruction: str = "") -> None:
        self.rng = np.random.default_rng(self.seed)

    def step(self, image: np.ndarray) -> np.ndarray:
        return self.rng.uniform(0.0, ARENA_SIZE, size=(self.frame_skip, 2))


def pusht_policy_family(noise_levels=(0.0, 10.0, 25.0, 50.0), seed: int = 0, random: bool = True) -> list[Policy]:
    """Image-based PushT policies of graded quality: pixel experts at `noise_levels`, then random."""
    policies = [as_policy(PixelExpert(noise, seed)) for noise in noise_levels]
    if random:
        policies.append(as_policy(RandomPolicy(seed)))
    return policies
