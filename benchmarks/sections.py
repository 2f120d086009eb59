"""What every results section shares: where the committed results live, how a file is loaded,
the `Section` a benchmark declares (its title, files, command and renderer), and the number and
table formatting the sections use, so that each benchmark's section reads like the others."""

from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rlvr_envs.core.paths import ASSETS
ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"  #: read at call time, so tests can point it elsewhere
VIDEO_ASSETS = ASSETS / "video"  #: the shipped models' cards
SHOWN = "benchmarks/results"  #: how a results path is written in README, whatever RESULTS is
NOT_MEASURED = "not yet measured"
WIDTH = 95  #: prose is wrapped like the rest of README; tables, pictures and comments are not


def nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def p_value(p: float | None) -> str:
    """A p-value: two decimals from 0.01 up, else one significant digit (3e-39)."""
    if nan(p):
        return "n/a"
    if p >= 0.01:
        return f"{p:.2f}"
    return sci(p)


def sci(x: float) -> str:
    """1e-3 rather than 1e-03."""
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def change(percent: float) -> str:
    return f"{percent:+.1f}%".replace("+-", "-")


def rate(fraction: float) -> str:
    """A fraction as a percentage: 34.5%, with 0% and 100% written plainly."""
    if fraction in (0.0, 1.0):
        return f"{fraction * 100:.0f}%"
    return f"{fraction * 100:.1f}%"


def fraction(value: float | None) -> str:
    return "n/a" if nan(value) else f"{value:.3f}"


def thousands(per_second: float) -> str:
    return f"{per_second / 1000:.1f}k"


def minutes_seconds(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def minutes_range(seconds: list[float]) -> str:
    low, high = round(min(seconds) / 60), round(max(seconds) / 60)
    return f"{low}" if low == high else f"{low}-{high}"


def seconds_range(seconds: list[float]) -> str:
    low, high = min(seconds), max(seconds)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def flag(command: str, name: str) -> str | None:
    """The value of `--name` in a recorded command line, if it is there."""
    found = re.search(rf"(?:^|\s){re.escape(name)}\s+(\S+)", command or "")
    return found.group(1) if found else None


def shown(relative: str) -> str:
    return f"`{SHOWN}/{relative}`"


def table(header: list[str], align: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def machine(data: dict) -> str:
    """A results file's machine, as one string: from its run record (`rlvr_envs.core.records`,
    the one format new runs write), else the older per-script fields (metrics_throughput: a dict)."""
    run = data.get("run")
    if isinstance(run, dict) and run.get("machine"):
        load = run.get("load") or {}
        busy = f" (shared: load {load.get('before')} -> {load.get('after')})" if load.get("busy") else ""
        return f"{run['machine']}{busy}"
    machine = data.get("machine", "")
    if isinstance(machine, dict):
        device = machine.get("device")
        parts = [machine.get("cpu"), f"{machine['cpu_count']} cores" if "cpu_count" in machine else None,
                 f"GPU {device}" if device and device != "CPU" else device]
        return ", ".join(str(p) for p in parts if p)
    return str(machine)


def load(relative: str) -> dict | None:
    """A results file under RESULTS, or None when it is absent."""
    path = RESULTS / relative
    return json.loads(path.read_text()) if path.is_file() else None


def card(model: str) -> dict:
    """A shipped model's card.json ({} when absent)."""
    path = VIDEO_ASSETS / model / "card.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@dataclass(frozen=True)
class Section:
    """One subsection: its title, its results files (relative to RESULTS; a glob pattern
    when `pattern`), the command that writes them, and the renderer of its text."""

    title: str
    files: tuple[str, ...]
    command: str
    body: Callable[[list[dict]], str]
    pattern: bool = False
    optional: tuple[str, ...] = field(default=())  #: extra files the body uses when present
    shown: str | None = None  #: how `files` is written when absent (a pattern's placeholder)
    exclude: tuple[str, ...] = field(default=())  #: a pattern's files that another section shows
    finding: str = ""  #: what the run found, in one line (the experiments index lists it)
    run_line: Callable[[dict], str] | None = None  #: a pattern's run in one line, for the experiments index

    def paths(self) -> list[str]:
        """The results files this section reads that exist now."""
        if self.pattern:
            found = (str(p.relative_to(RESULTS)) for p in RESULTS.glob(self.files[0]))
            return sorted(f for f in found if f not in self.exclude)
        return [f for f in (*self.files, *self.optional) if (RESULTS / f).is_file()]

    def render(self) -> str:
        if self.pattern:
            found = self.paths()
            if not found:
                return self.missing(self.files)
            return self.body([load(f) | {"_file": f} for f in found])
        absent = [f for f in self.files if not (RESULTS / f).is_file()]
        if absent:
            return self.missing(absent)
        text = self.body([load(f) | {"_file": f} for f in self.files]
                         + [(load(f) or {}) | {"_file": f} for f in self.optional])
        gaps = [f for f in self.optional if not (RESULTS / f).is_file()]
        return text + "".join(f"\n\n{shown(f)}: {NOT_MEASURED}." for f in gaps)

    def missing(self, absent) -> str:
        files = shown(self.shown) if self.shown else ", ".join(shown(f) for f in absent)
        return f"**{self.title}** ({files}): {NOT_MEASURED}; `{self.command}` writes it."


def missing_fields(committed: Any, fresh: Any, names: tuple[str, ...] = (), path: str = "") -> list[str]:
    """The fields a fresh run of a benchmark writes that its committed result lacks (as JSON
    pointers), so that a committed result older than the code presenting it fails its test. A
    mapping of names to records (every value a dict: models, seeds, policies), or one at a pointer
    in `names`, is data, not fields: a fresh entry is compared with the committed entry of its
    name, else with every committed entry (a field is missing when none has it)."""
    if isinstance(fresh, dict) and isinstance(committed, dict):
        records = path in names or (bool(fresh) and bool(committed) and all(
            isinstance(v, dict) for v in (*fresh.values(), *committed.values())))
        missing = []
        for key, value in fresh.items():
            here = f"{path}/{key}"
            if key in committed:
                missing += missing_fields(committed[key], value, names, here)
            elif records:  # a name the committed run lacks is data (and an empty mapping has nothing to compare)
                each = [missing_fields(entry, value, names, here) for entry in committed.values()]
                missing += [f for f in each[0] if all(f in other for other in each[1:])] if each else []
            else:
                missing.append(here)
        return missing
    if isinstance(fresh, list) and isinstance(committed, list) and fresh and committed:
        return missing_fields(committed[0], fresh[0], names, f"{path}/0")
    return []


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def commands(d: dict, module: str) -> str:
    """A results file's command in backticks; runs joined by `module --merge` name each run's command."""
    if isinstance(d["command"], list):
        into = f" --out {d['merged_into']}" if d.get("merged_into") else ""
        return (", ".join(f"`{c}`" for c in d["command"]) + f", joined by `python -m {module} "
                f"--merge {' '.join(d.get('runs', []))}{into}`")
    return f"`{d['command']}`"
_BLOCK_START = re.compile(r"^([-+*>]|\d+[.)]|#+)(\s|$)")  # a line that would start a list, quote or heading


def wrap(text: str) -> str:
    """Prose lines wrapped at WIDTH; no wrapped line may start a markdown list, quote or heading."""
    out = []
    for line in text.split("\n"):
        if len(line) <= WIDTH or line.startswith(("|", "!", "<!--", "#")):
            out.append(line)
            continue
        lines = textwrap.wrap(line, WIDTH, break_long_words=False, break_on_hyphens=False)
        for i in range(1, len(lines)):
            while _BLOCK_START.match(lines[i]):
                word, _, rest = lines[i].partition(" ")
                lines[i - 1] += " " + word
                lines[i] = rest
        out += [line for line in lines if line]
    return "\n".join(out)
