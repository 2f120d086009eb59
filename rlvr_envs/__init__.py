"""rlvr-world: world-model training as gymnasium environments with verified rewards."""

from rlvr_envs._gym_hook import install as _install_gym_hook

__version__ = "0.1.0"

# Registers the RLVRWorld ids now if gymnasium is loaded, else the moment it is imported
# (cheap: importing rlvr_envs must not import gymnasium, since the .pth runs this at startup).
_install_gym_hook()
