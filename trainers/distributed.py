"""Scale-out of our own training loops on `accelerate` (DDP, or FSDP from a config file).

The video MLE trainer, the tokenizer trainers and the video GRPO loop call `start_run` once:
it applies the device/precision policy (`rlvr_envs.core.device`) and starts an
`accelerate.Accelerator`, which under `accelerate launch` (see `configs/accelerate/`) joins the
process group. Each rank takes its shard of the global batch (`shard`), gradients are averaged
by DDP, and rank 0 alone logs, evaluates and saves. A run started by plain `python -m ...`
is one process and behaves exactly as before. Checkpoints hold full (unsharded) weights and
optimizer state under DDP, so `--resume` works at any world size.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import torch

from rlvr_envs.core.device import Precision, setup_device


@dataclass
class TrainRun:
    """One process of a (possibly distributed) run: its accelerator, device and precision."""

    accelerator: Any  #: None for a single process (nothing of accelerate is touched then)
    precision: Precision

    @property
    def device(self) -> torch.device:
        return self.precision.device

    @property
    def rank(self) -> int:
        return 0 if self.accelerator is None else self.accelerator.process_index

    @property
    def world(self) -> int:
        return 1 if self.accelerator is None else self.accelerator.num_processes

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def check_divisible(self, count: int, what: str) -> None:
        if count % self.world:
            raise ValueError(f"{what} = {count} cannot be split evenly over {self.world} processes: make it a "
                             f"multiple of {self.world}")

    def shard(self, items: Any) -> Any:
        """This rank's contiguous share of a global batch (its length divisible by the world size)."""
        per = len(items) // self.world
        return items[self.rank * per: (self.rank + 1) * per]

    def global_scale(self, local_count: float) -> float:
        """Factor that turns a loss averaged over this rank's `local_count` units into its share of
        the average over every rank's units, once DDP averages gradients (1.0 on one process)."""
        if self.world == 1:
            return 1.0
        total = self.accelerator.reduce(torch.tensor(float(local_count), device=self.device), reduction="sum")
        return float(local_count) * self.world / max(float(total), 1e-12)

    def agree(self, flag: bool) -> bool:
        """True on every rank when it is true on any (a time limit must stop all ranks at one step)."""
        if self.world == 1:
            return bool(flag)
        value = torch.tensor(float(bool(flag)), device=self.device)
        return bool(self.accelerator.reduce(value, reduction="sum") > 0)

    def from_main(self, value: float) -> float:
        """Rank 0's value on every rank (e.g. its clock, where a schedule follows wall time)."""
        if self.world == 1:
            return float(value)
        tensor = torch.tensor([float(value) if self.is_main else 0.0], dtype=torch.float64, device=self.device)
        return float(self.accelerator.reduce(tensor, reduction="sum"))

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's rows, concatenated in rank order (logging of global means)."""
        if self.world == 1:
            return tensor.cpu()
        return self.accelerator.gather(tensor.to(self.device)).cpu()

    def backward(self, loss: torch.Tensor) -> None:
        if self.world == 1:
            loss.backward()
        else:
            self.accelerator.backward(loss)

    def clip_grad_norm_(self, parameters: Any, max_norm: float) -> None:
        if self.world == 1:
            torch.nn.utils.clip_grad_norm_(parameters, max_norm)
        else:
            self.accelerator.clip_grad_norm_(parameters, max_norm)

    def prepare(self, model: Any, optimizer: Any) -> tuple[Any, Any]:
        """Several processes: accelerate wraps them (DDP, or FSDP per the launch config). One
        process: the model on this run's device, unwrapped (so `cuda:N` is honoured)."""
        if self.world == 1:
            return model.to(self.device), optimizer
        return self.accelerator.prepare(model, optimizer)

    def unwrap(self, model: Any) -> Any:
        return model if self.world == 1 else self.accelerator.unwrap_model(model)

    def wait(self) -> None:
        if self.world > 1:
            self.accelerator.wait_for_everyone()

    def end(self) -> None:
        """Leave the process group (a gloo/NCCL group left open makes the launcher wait)."""
        if self.world > 1 and torch.distributed.is_available() and torch.distributed.is_initialized():
            self.wait()
            torch.distributed.destroy_process_group()

    def describe(self) -> str:
        return f"{self.precision.describe()}; {self.world} process(es)"


class Method(torch.nn.Module):
    """A model whose `forward` is one of its methods (e.g. a tokenizer's `reconstruct`): DDP
    syncs gradients only of what runs through the wrapped module's forward."""

    def __init__(self, module: torch.nn.Module, method: str):
        super().__init__()
        self.module, self.method = module, method

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.module, self.method)(*args, **kwargs)


def start_run(device: str = "auto", precision: str = "auto", threads: int | None = None) -> TrainRun:
    """The device/precision policy, then (under `accelerate launch` with several processes) an
    Accelerator on that device, each rank on its own GPU."""
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if launched and device.startswith("cuda:"):
        raise ValueError(f"--device {device}: under accelerate launch each process takes its own GPU (LOCAL_RANK); "
                         "pass --device cuda or auto")
    decided = setup_device(device, precision, threads)
    if not launched:
        return TrainRun(None, decided)
    from accelerate import Accelerator

    # our policy decides autocast; accelerate only places the model and syncs gradients
    accelerator = Accelerator(cpu=decided.device.type == "cpu", mixed_precision="no")
    engine = str(getattr(accelerator.distributed_type, "value", accelerator.distributed_type))
    if engine not in ("MULTI_GPU", "MULTI_CPU", "NO"):
        raise ValueError(f"accelerate launched this run as {engine}; this loop runs under DDP only (configs/accelerate/"
                         "ddp_*.yaml): its rank 0 evaluates and saves an unsharded model, and every world-model "
                         "preset up to paper fits one GPU (docs/scale_out.md). FSDP and DeepSpeed configs are for "
                         "the TRL language trainers")
    return TrainRun(accelerator, replace(decided, device=accelerator.device))


def machine_line(run: TrainRun) -> str:
    """The card's machine field: architecture, threads or GPU name, and the world size."""
    import platform

    if run.device.type == "cuda":
        what = torch.cuda.get_device_name(run.device)
    else:
        what = f"{torch.get_num_threads()} threads, CPU"
    return f"{platform.machine()}, {what}, {run.world} process(es), {run.precision.describe()}"
