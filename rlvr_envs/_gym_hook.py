"""Register the RLVRWorld ids the moment gymnasium is imported, with no import of ours.

Gymnasium 1.x no longer loads `gymnasium.envs` entry-point plugins, so the install ships
`rlvr_world_gym.pth`, which Python runs at startup: it calls `install()`, which puts a
one-shot finder on `sys.meta_path`. The finder costs nothing until `import gymnasium`
happens; then it lets gymnasium load normally and calls `register_envs()` right after.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings


class _RegisterAfterGymnasium(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            try:
                from rlvr_envs.registration import register_envs

                register_envs()
            except Exception as exc:  # never break `import gymnasium` for the user
                warnings.warn(f"rlvr-world could not register its envs: {exc!r}", stacklevel=2)

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    if "gymnasium" in sys.modules:
        from rlvr_envs.registration import register_envs

        register_envs()
    elif not any(isinstance(f, _RegisterAfterGymnasium) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterGymnasium())
