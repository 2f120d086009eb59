"""One device and precision policy for every entry point that runs a model.

`--device auto|cpu|cuda|cuda:N` is resolved by `resolve_device` (auto: CUDA when present);
what to compute in is decided by one pure function, `precision_policy`, from the device's
capabilities: bf16 autocast (fp32 weights) only where the device computes bf16 natively
(CUDA with bf16 support, e.g. H100/H200; CPUs with AVX512-BF16 or AMX), TF32 matmuls on
CUDA, fp32 otherwise. Emulated bf16 is slower than fp32 (measured 2.1x slower per SFT step
on an AVX512 Xeon without BF16), so "auto" never picks it; `precision="bf16"` forces it.

    from rlvr_envs.core.device import setup_device
    run = setup_device("auto", threads=2)      # resolves, applies TF32, sets threads
    model.to(run.device)
    with run.autocast():
        loss = model(...).loss
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

DEVICE_HELP = "auto (CUDA when present), cpu, cuda or cuda:N"
PRECISIONS = ("auto", "bf16", "fp32")


def cpu_has_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX); without it PyTorch
    emulates bf16 and autocast is slower than fp32."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:  # not Linux: assume emulated bf16
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def resolve_device(name: str | torch.device | None = "auto") -> torch.device:
    """`auto` -> cuda when a CUDA device is visible, else cpu; `cuda`/`cuda:N` checked to exist.
    A bad name fails with one line saying what to pass."""
    if isinstance(name, torch.device):
        name = str(name)
    name = (name or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise ValueError(f"--device {name!r} is not a device: pass {DEVICE_HELP}") from None
    if device.type == "cpu":
        return torch.device("cpu")
    if device.type != "cuda":
        raise ValueError(f"--device {name!r}: this project runs on {DEVICE_HELP}")
    if not torch.cuda.is_available():
        raise ValueError(f"--device {name!r}: no CUDA device is visible to torch (torch.cuda.is_available() is "
                         "False); pass --device cpu, or auto to use CUDA only when present")
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise ValueError(f"--device {name!r}: only {count} CUDA device(s) are visible (cuda:0..cuda:{count - 1})")
    return device


@dataclass(frozen=True)
class Capabilities:
    """What `precision_policy` needs to know about a device (mockable in tests)."""

    device_type: str  #: "cpu" or "cuda"
    native_bf16: bool  #: computes bf16 in hardware (CUDA bf16 support; CPU AVX512-BF16/AMX)
    name: str = ""


def device_capabilities(device: torch.device) -> Capabilities:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return Capabilities("cuda", bool(torch.cuda.is_bf16_supported()), torch.cuda.get_device_name(index))
    return Capabilities("cpu", cpu_has_native_bf16(), "CPU")


@dataclass(frozen=True)
class Precision:
    """The decision: autocast dtype (None = fp32), TF32 matmuls, and why."""

    device: torch.device
    autocast_dtype: torch.dtype | None
    tf32: bool
    reason: str

    @property
    def bf16(self) -> bool:
        return self.autocast_dtype == torch.bfloat16

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def describe(self) -> str:
        mode = "bf16 autocast" if self.bf16 else ("fp32 (TF32 matmuls)" if self.tf32 else "fp32")
        return f"{self.device} {mode}: {self.reason}"


def precision_policy(device: torch.device, capabilities: Capabilities, request: str = "auto") -> Precision:
    """bf16 autocast where `capabilities` say bf16 is native (or `request="bf16"` forces it),
    TF32 matmuls on CUDA, fp32 otherwise or with `request="fp32"`."""
    if request not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {request!r}")
    cuda = capabilities.device_type == "cuda"
    if request == "fp32":
        return Precision(device, None, cuda, "fp32 requested")
    if request == "bf16":
        why = "bf16 requested" + ("" if capabilities.native_bf16 else " (emulated on this device: slower than fp32)")
        return Precision(device, torch.bfloat16, cuda, why)
    if capabilities.native_bf16:
        return Precision(device, torch.bfloat16, cuda, f"{capabilities.name or device.type} computes bf16 natively")
    if cuda:
        return Precision(device, None, True, f"{capabilities.name or 'this GPU'} has no native bf16")
    return Precision(device, None, False, "this CPU has no AVX512-BF16/AMX: emulated bf16 is slower than fp32")


def apply_precision(precision: Precision) -> None:
    """Process-wide switches the decision needs (TF32 matmuls and cuDNN convolutions on CUDA)."""
    if precision.tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")


def setup_device(name: str = "auto", request: str = "auto", threads: int | None = None) -> Precision:
    """Resolve `name`, decide the precision, apply it, and set CPU threads: what an entry point
    calls once before building models."""
    device = resolve_device(name)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # plain "cuda" leaves the choice to the launcher (LOCAL_RANK)
    precision = precision_policy(device, device_capabilities(device), request)
    apply_precision(precision)
    if threads:
        torch.set_num_threads(threads)
    return precision


def checked_device(name: str) -> str:
    """argparse `type=` for `--device`: a bad or absent device is a one-line usage error."""
    import argparse

    try:
        resolve_device(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name


def add_device_argument(parser: Any) -> None:
    """`--device` for a command-line entry point that runs a model (default auto)."""
    parser.add_argument("--device", type=checked_device, default="auto",
                        help=f"where models and rewards run: {DEVICE_HELP}")


def maybe_compile(model: Any, enabled: bool) -> Any:
    """`torch.compile(model)` when asked (worth it on a GPU for long runs; minutes of warm-up)."""
    return torch.compile(model) if enabled else model


def generator_for(device: torch.device | str, seed: int | None) -> torch.Generator | None:
    """A seeded generator on `device`, so sampling draws on the device without a host round trip."""
    if seed is None:
        return None
    return torch.Generator(device=torch.device(device)).manual_seed(int(seed))
