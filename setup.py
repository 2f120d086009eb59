"""Only here to ship `rlvr_world_gym.pth`, the startup hook that registers our gymnasium
ids (gymnasium 1.x loads no entry-point plugins). All metadata is in pyproject.toml."""

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

PTH = "rlvr_world_gym.pth"
PTH_TEXT = Path(__file__).with_name(PTH).read_text()


class BuildPyWithPth(build_py):
    """Regular wheels: put the hook at the root of site-packages."""

    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(PTH, os.path.join(self.build_lib, PTH), preserve_mode=0)

    def get_outputs(self, include_bytecode=1):
        extra = [] if self.editable_mode else [os.path.join(self.build_lib, PTH)]
        return super().get_outputs(include_bytecode) + extra


class EditableWheelWithPth(editable_wheel):
    """Editable installs (`pip install -e .`): add the hook beside setuptools' own .pth."""

    def _select_strategy(self, *args, **kwargs):
        strategy = super()._select_strategy(*args, **kwargs)

        class WithPth:
            def __enter__(self):
                strategy.__enter__()
                return self

            def __exit__(self, *exc):
                return strategy.__exit__(*exc)

            def __call__(self, wheel, files, mapping):
                result = strategy(wheel, files, mapping)
                wheel.writestr(PTH, PTH_TEXT)
                return result

        return WithPth()


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
