"""rlvr-world: world-model training as gymnasium environments with verified rewards.

Importing the package registers every `RLVRWorld/...` id with gymnasium (gymnasium 1.x's
convention), so `import rlvr_envs` or `gym.register_envs(rlvr_envs)` before `gym.make`,
or name the module in the id: `gym.make("rlvr_envs:RLVRWorld/MiniTextWorld-v0")`.

Layout: `core/` (domain-free env, episode machine, task protocol, vector env, checker),
then one folder per domain: `text_game/`, `web/`, `video/`.
"""

from rlvr_envs.registration import register_envs

__version__ = "0.1.0"

register_envs()
