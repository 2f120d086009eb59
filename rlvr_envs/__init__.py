"""rlvr-world: world-model training as gymnasium environments with verified rewards."""

from rlvr_envs.registration import register_envs

__version__ = "0.1.0"

register_envs()
