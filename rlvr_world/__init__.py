"""`rlvr-world` as a verifiers taskset package: verifiers finds tasksets by id among installed
packages (`vf-eval rlvr-world --env.taskset.env-id RLVRWorld/MiniTextWorld-v0`). The classes
live in `rlvr_envs.integrations.verifiers`; this package only names them for verifiers' loader
(it needs the [verifiers] extra)."""

from rlvr_envs.integrations.verifiers import RLVRWorldEnv, RLVRWorldHarness, RLVRWorldTaskset

__all__ = ["RLVRWorldTaskset", "RLVRWorldEnv", "RLVRWorldHarness"]
