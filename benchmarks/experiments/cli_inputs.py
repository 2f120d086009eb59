"""Bad command-line values, each run as a user would: every one must end in argparse's one-line
error with exit code 2 (after its usage block, and nothing else on stderr), before any work,
never in a traceback or an accepted run; and missing or broken data named on the command line
(`data_cases`) in one line with exit code 1 and no usage block.

    python -m benchmarks.experiments.cli_inputs        # -> benchmarks/results/cli_inputs.{json,md}

The catalogue (`cases`) is the one the test suite asserts (tests/test_cli_inputs.py runs it
in-process); here each case runs in a fresh `python -m ...` process, timed, with a bound
(`BOUND_S`) past which the value counts as accepted (the command started working).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import sections as fmt
from rlvr_envs.core.records import RunRecord, note

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
BOUND_S = 90.0  #: a bad value still running after this long was accepted (work started)


def cases(scratch: Path) -> dict[str, list[str]]:
    """Case name -> argv after `python -m` (the module first). `scratch` holds `a_file` (an
    existing file), `finished/` (a finished run's card.json), `started/` (an unfinished
    run's log.jsonl; with the settings it started with in `settings.json`), and is itself a
    folder that exists."""
    a_file = str(scratch / "a_file")
    out = str(scratch / "out")
    finished, started, empty = str(scratch / "finished"), str(scratch / "started"), str(scratch / "empty")
    gpu_check = ["benchmarks.gpu_check", "--device", "cpu", "--out", out, "--work", out]
    language = ["trainers.grpo", "--env-id", "RLVRWorld/MiniTextWorld-v0"]
    unwritable = "/proc/rlvr-world/out"  # /proc takes no new entries, even from root
    cli = ["rlvr_envs.cli"]
    video = ["trainers.grpo", "--env-id", "RLVRWorld/PushT-SingleStep-v0"]
    return {
        "plan --episodes -1": [*cli, "plan", "--episodes", "-1", "--out", out],
        "plan --samples 0": [*cli, "plan", "--samples", "0", "--out", out],
        "plan --top-k above --samples": [*cli, "plan", "--samples", "4", "--top-k", "10", "--out", out],
        "plan --planners nope": [*cli, "plan", "--planners", "base,nope", "--out", out],
        "plan rlvr planner without --rlvr-model": [*cli, "plan", "--planners", "rlvr", "--out", out],
        "plan --init-std nan": [*cli, "plan", "--init-std", "nan", "--out", out],
        "plan --threads 0": [*cli, "plan", "--threads", "0", "--out", out],
        "plan --out an existing file": [*cli, "plan", "--out", a_file],
        "plan --base-model a missing folder": [*cli, "plan", "--base-model", str(scratch / "missing"), "--out", out],
        "policy-eval --starts -1": [*cli, "policy-eval", "--starts", "-1", "--out", out],
        "policy-eval --noise abc": [*cli, "policy-eval", "--noise", "abc", "--out", out],
        "policy-eval --noise -5": [*cli, "policy-eval", "--noise", "0,-5", "--out", out],
        "policy-eval --temperature -1": [*cli, "policy-eval", "--temperature", "-1", "--out", out],
        "policy-eval --success-coverage 2": [*cli, "policy-eval", "--success-coverage", "2", "--out", out],
        "policy-eval --max-steps 0": [*cli, "policy-eval", "--max-steps", "0", "--out", out],
        "policy-eval --out an existing file": [*cli, "policy-eval", "--out", a_file],
        "policy-eval --data a file": [*cli, "policy-eval", "--data", a_file, "--out", out],
        "demo --threads -1": [*cli, "demo", "--threads", "-1", "--out", out],
        "demo --grpo-minutes -1": [*cli, "demo", "--grpo-minutes", "-1", "--out", out],
        "demo --grpo-steps -1": [*cli, "demo", "--grpo-steps", "-1", "--out", out],
        "demo --domain video": [*cli, "demo", "--domain", "video", "--out", out],
        "demo --out an existing file": [*cli, "demo", "--out", a_file],
        "episode on a learned simulator": [*cli, "episode", "RLVRWorld/PushT-LearnedSim-v0"],
        "episode unknown id": [*cli, "episode", "RLVRWorld/NoSuchTask-v0"],
        "episode --index -1": [*cli, "episode", "--index", "-1"],
        "episode --index past the end": [*cli, "episode", "--index", "1000000"],
        "episode --data-dir a file": [*cli, "episode", "RLVRWorld/TextGame-v0", "--data-dir", a_file],
        "episode --env-kwargs not JSON": [*cli, "episode", "--env-kwargs", "{reward: mae"],
        "episode --env-kwargs unknown key": [*cli, "episode", "--env-kwargs", "rewrd=task"],
        "episode --env-kwargs bad value": [*cli, "episode", "--env-kwargs", "reward=xyz"],
        "episode --env-kwargs size=1000000000": [*cli, "episode", "--env-kwargs", "size=1000000000"],
        "list --data-dir a file": [*cli, "list", "--data-dir", a_file],
        "data pusht --workers 0": [*cli, "data", "pusht", "--workers", "0", "--out", out],
        "data pusht --workers -3": [*cli, "data", "pusht", "--workers", "-3", "--out", out],
        "data pusht --episodes 0": [*cli, "data", "pusht", "--episodes", "0", "--out", out],
        "data pusht --out an existing file": [*cli, "data", "pusht", "--out", a_file],
        "data rt1 --expected-episodes 0": [*cli, "data", "rt1", "--src", str(scratch), "--expected-episodes", "0",
                                           "--out", out],
        "trainers.grpo --model /nonexistent": ["trainers.grpo", "--env-id", "RLVRWorld/MiniTextWorld-v0",
                                               "--model", "/nonexistent", "--out", out],
        "trainers.grpo --group-size 1": ["trainers.grpo", "--group-size", "1", "--out", out],
        "trainers.grpo --steps abc": ["trainers.grpo", "--steps", "abc", "--out", out],
        "trainers.sft --model /nonexistent": ["trainers.sft", "--model", "/nonexistent", "--out", out],
        "trainers.sft --steps -1": ["trainers.sft", "--from-scratch", "--steps", "-1", "--out", out],
        "trainers.grpo --out an existing file": ["trainers.grpo", "--out", a_file],
        "policy-eval --out unwritable": [*cli, "policy-eval", "--out", unwritable],
        "plan --out unwritable": [*cli, "plan", "--out", unwritable],
        "data pusht --out unwritable": [*cli, "data", "pusht", "--out", unwritable],
        "trainers.grpo --max-seconds -1": [*video, "--max-seconds", "-1", "--out", out],
        "trainers.grpo --threads 0": [*video, "--threads", "0", "--out", out],
        "trainers.grpo --lr nan": [*video, "--lr", "nan", "--out", out],
        "trainers.grpo --top-k -1": [*video, "--top-k", "-1", "--out", out],
        "trainers.grpo --lora-r -4": [*video, "--lora-r", "-4", "--out", out],
        "trainers.grpo --out unwritable": [*video, "--out", unwritable],
        "trainers.grpo --resume on a finished run": [*video, "--resume", "--steps", "10", "--out", finished],
        "trainers.grpo into a finished run": [*video, "--out", finished],
        "trainers.grpo into a started run without --resume": [*video, "--out", started],
        "trainers.grpo --resume where no run is": [*video, "--resume", "--out", empty],
        "trainers.sft --lr nan": ["trainers.sft", "--from-scratch", "--lr", "nan", "--out", out],
        "trainers.sft --resume on a finished run": ["trainers.sft", "--from-scratch", "--resume", "--out", finished],
        "trainers.train_video_world_model --threads 0": ["trainers.train_video_world_model", "--threads", "0",
                                                         "--out", out],
        "trainers.train_video_world_model --resume where no run is": ["trainers.train_video_world_model",
                                                                      "--resume", "--out", empty],
        "trainers.train_frame_tokenizer --lr -1": ["trainers.train_frame_tokenizer", "--lr", "-1", "--out", out],
        "trainers.train_frame_tokenizer into a finished run": ["trainers.train_frame_tokenizer", "--out", finished],
        "trainers.train_compressed_tokenizer --max-seconds nan": ["trainers.train_compressed_tokenizer",
                                                                  "--max-seconds", "nan", "--out", out],
        "trainers.grpo unknown --env-id": ["trainers.grpo", "--env-id", "RLVRWorld/Nope-v0", "--out", out],
        "trainers.sft unknown --env-id": ["trainers.sft", "--env-id", "RLVRWorld/Nope-v0", "--from-scratch",
                                          "--out", out],
        "trainers.sb3_ppo unknown --env-id": ["trainers.sb3_ppo", "--env-id", "RLVRWorld/Nope-v0", "--out", out],
        "trainers.grpo on a web-agent id": ["trainers.grpo", "--env-id", "RLVRWorld/MiniWeb-Goal-v0", "--out", out],
        "trainers.grpo on a learned-simulator id": ["trainers.grpo", "--env-id", "RLVRWorld/PushT-LearnedSim-v0",
                                                    "--out", out],
        "trainers.train_video_world_model --tokenizer not a tokenizer": ["trainers.train_video_world_model",
                                                                         "--tokenizer", "/proc/x", "--out", out],
        "data pusht --policy-weights expert=nan": [*cli, "data", "pusht", "--policy-weights", "expert=nan",
                                                   "--out", out],
        "episode --env-kwargs mode=token": [*cli, "episode", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                            "mode=token"],
        "episode --env-kwargs task=this:x": [*cli, "episode", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                             "task=this:x"],
        "policy-eval --policy os:getcwd": [*cli, "policy-eval", "--policy", "os:getcwd", "--out", out],
        "episode --env-kwargs env_id=...": [*cli, "episode", "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                            "env_id=RLVRWorld/MiniWeb-v0"],
        "trainers.grpo --env-kwargs task=os:getcwd": ["trainers.grpo", "--env-id", "RLVRWorld/MiniTextWorld-v0",
                                                      "--env-kwargs", "task=os:getcwd", "--out", out],
        "trainers.sft on a web-agent id": ["trainers.sft", "--env-id", "RLVRWorld/MiniWeb-Goal-v0", "--from-scratch",
                                           "--out", out],
        "trainers.sb3_ppo on a learned-simulator id": ["trainers.sb3_ppo", "--env-id", "RLVRWorld/PushT-LearnedSim-v0",
                                                       "--out", out],
        "data pusht --policy-weights expert=-1": [*cli, "data", "pusht", "--policy-weights", "expert=-1",
                                                  "--out", out],
        "data pusht --policy-weights all zero": [*cli, "data", "pusht", "--policy-weights", "expert=0,random=0",
                                                 "--out", out],
        "trainers.train_video_world_model --micro-batch -1": ["trainers.train_video_world_model", "--micro-batch",
                                                              "-1", "--out", out],
        "gpu_check --deadline inf": [*gpu_check, "--deadline", "inf"],
        "gpu_check --deadline 1e309": [*gpu_check, "--deadline", "1e309"],
        "gpu_check --deadline past a day": [*gpu_check, "--deadline", "1e300"],
        "gpu_check --deadline 0": [*gpu_check, "--deadline", "0"],
        "gpu_check --threads 0": [*gpu_check, "--threads", "0"],
        "gpu_check --stages ''": [*gpu_check, "--stages", ""],
        "gpu_check --stages nope": [*gpu_check, "--stages", "nope"],
        "trainers.grpo language id without --model": [*language, "--out", out],
        "trainers.grpo --generation-batch on a language id": [*language, "--model", "/x", "--generation-batch", "2",
                                                              "--out", out],
        "trainers.grpo --video-prompts on a language id": [*language, "--model", "/x", "--video-prompts", "a",
                                                           "--out", out],
        "trainers.grpo --balance on a video id": [*video, "--balance", "--out", out],
        "trainers.grpo --resume with another --lr": [*video, "--resume", "--lr", "1", "--out", started],
        "trainers.grpo --resume with another --seed": [*video, "--resume", "--seed", "3", "--out", started],
        "trainers.sft --resume with another --lr": ["trainers.sft", "--from-scratch", "--resume", "--lr", "1",
                                                    "--out", started],
        "trainers.train_frame_tokenizer --resume with another --lr": ["trainers.train_frame_tokenizer", "--resume",
                                                                      "--lr", "1", "--out", started],
        "trainers.train_video_world_model --resume with another --seed": ["trainers.train_video_world_model",
                                                                          "--resume", "--seed", "3", "--out", started],
        "trainers.train_compressed_tokenizer --resume with another --lr": ["trainers.train_compressed_tokenizer",
                                                                           "--resume", "--lr", "1", "--out", started],
        "trainers.grpo --eval-windows 0": [*video, "--eval-windows", "0", "--out", out],
        "trainers.grpo --prompts-per-step 0": [*video, "--prompts-per-step", "0", "--out", out],
        "trainers.sft --batch-size 0": ["trainers.sft", "--from-scratch", "--batch-size", "0", "--out", out],
        "trainers.train_frame_tokenizer --steps 0": ["trainers.train_frame_tokenizer", "--steps", "0", "--out", out],
        "trainers.train_video_world_model --batch-size 0": ["trainers.train_video_world_model", "--batch-size", "0",
                                                            "--out", out],
        "trainers.train_compressed_tokenizer --threads 0": ["trainers.train_compressed_tokenizer", "--threads", "0",
                                                            "--out", out],
        "policy-eval --policy builtins:exec": [*cli, "policy-eval", "--policy", "builtins:exec", "--out", out],
        "policy-eval --policy os:system": [*cli, "policy-eval", "--policy", "os:system", "--out", out],
        "policy-eval --policy builtins:input": [*cli, "policy-eval", "--policy", "builtins:input", "--out", out],
        "policy-eval --policy builtins:breakpoint": [*cli, "policy-eval", "--policy", "builtins:breakpoint",
                                                     "--out", out],
        "policy-eval --on-policy-error nope": [*cli, "policy-eval", "--on-policy-error", "nope", "--out", out],
        "policy-eval --lead -1": [*cli, "policy-eval", "--lead", "-1", "--out", out],
        "policy-eval --heldout-episodes 0": [*cli, "policy-eval", "--heldout-episodes", "0", "--out", out],
        "plan --heldout-episodes 0": [*cli, "plan", "--heldout-episodes", "0", "--out", out],
        "data pusht --seed -1": [*cli, "data", "pusht", "--seed", "-1", "--out", out],
        "episode --env-kwargs size=0": [*cli, "episode", "--env-kwargs", "size=0"],
        "episode --env-kwargs misspelt key on a video id": [*cli, "episode", "RLVRWorld/PushT-SingleStep-v0",
                                                            "--env-kwargs", "rewrad=mae"],
    }


def data_cases(scratch: Path) -> dict[str, list[str]]:
    """Case name -> argv (as `cases`) of missing or broken data named on the command line: one line
    (no usage block) and exit code 1, the README's rule for data, never a traceback."""
    from rlvr_envs.video.task import default_tokenizer_dir

    cli = ["rlvr_envs.cli", "episode"]
    return {
        "episode --env-kwargs tokenizer= a missing folder": [*cli, "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                                              "tokenizer=/nonexistent/tok"],
        "episode --env-kwargs tokenizer= a file": [*cli, "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                                   f"tokenizer={scratch / 'a_file'}"],
        "episode --env-kwargs tokenizer= an empty folder": [*cli, "RLVRWorld/MiniTextWorld-v0", "--env-kwargs",
                                                            f"tokenizer={scratch / 'empty'}"],
        "episode RT-1 with data_dir= a missing folder": [*cli, "RLVRWorld/RT1-SingleStep-v0", "--env-kwargs",
                                                         "data_dir=/nonexistent/rt1",
                                                         f"tokenizer={default_tokenizer_dir()}"],
        "episode TextGame with --data-dir holding no data": [*cli, "RLVRWorld/TextGame-v0", "--data-dir",
                                                             str(scratch / "empty")],
    }


def scratch_dir() -> Path:
    scratch = Path(tempfile.mkdtemp(prefix="rlvr_cli_inputs_"))
    (scratch / "a_file").write_text("not a folder\n")
    for name, marker in (("finished", "card.json"), ("started", "log.jsonl"), ("empty", "")):
        (scratch / name).mkdir()
        if marker:
            (scratch / name / marker).write_text("{}\n" if marker.endswith(".json") else "")
    (scratch / "started" / "settings.json").write_text(json.dumps({"lr": 5e-5, "seed": 0}) + "\n")
    return scratch


def judge(returncode: int | None, stderr: str, seconds: float, expected: int = 2) -> dict:
    """What a case did: `refused` (exit `expected`, no traceback, exactly one `error:` line and
    nothing else on stderr but, for exit 2, argparse's usage block once), or why not: `extra
    output` counts every other line (a warning, a progress bar, a second error, a usage block
    before a data error), which the one-line promise excludes."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    error = next((line for line in reversed(lines) if "error:" in line), lines[-1] if lines else "")
    usage = [i for i, line in enumerate(lines) if line.startswith("usage:")]
    continued = {i for start in usage[:1] for i in range(start + 1, len(lines))
                 if lines[i].startswith((" ", "\t")) and all(lines[j].startswith((" ", "\t"))
                                                            for j in range(start + 1, i + 1))}
    errors = [line for line in lines if "error:" in line]
    extra = len(lines) - len(errors[:1]) - (len(usage[:1]) + len(continued) if expected == 2 else 0)
    traceback = "Traceback (most recent call last)" in stderr
    accepted = returncode is None or returncode == 0
    outcome = ("traceback" if traceback else "accepted" if accepted else
               f"exit {returncode}" if returncode != expected or not errors else
               "extra output" if extra or len(usage) > 1 else "refused")
    return {"outcome": outcome, "returncode": returncode, "traceback": traceback, "accepted": accepted,
            "seconds": round(seconds, 2), "error": error.strip(), "extra_lines": extra}


def run_case(argv: list[str], expected: int = 2) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", *argv], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=BOUND_S)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) else (expired.stderr or "")
        return judge(None, stderr, time.perf_counter() - started, expected)
    return judge(done.returncode, done.stderr, time.perf_counter() - started, expected)


def markdown(result: dict) -> str:
    counts = result["counts"]
    lines = ["# Bad command-line values", "", f"Measured by `{result['command']}`; {result['note']}.", "",
             f"**{counts['cases']} bad values: {counts['refused']} refused with a one-line error and the "
             f"documented exit code (2 after argparse's usage block for a bad argument, 1 alone for missing or "
             f"broken data), {counts.get('extra_output', 0)} with other lines on stderr, "
             f"{counts['tracebacks']} tracebacks, {counts['accepted']} accepted.** Each case runs in a fresh "
             f"process (`python -m ...`); seconds include Python's start and the command's imports.", "",
             "| case | outcome | exit | s | message |", "|---|---|---:|---:|---|"]
    for name, row in result["cases"].items():
        message = row["error"].replace("|", "/")
        message = message if len(message) <= 110 else message[:107] + "..."
        lines.append(f"| `{name}` | {row['outcome']} | {row['returncode']} | {row['seconds']:.1f} | {message} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--out", default=str(RESULTS / "cli_inputs"), help="results path without suffix")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this text")
    args = parser.parse_args(argv)
    record = RunRecord("python -m benchmarks.experiments.cli_inputs", args, threads=1)
    scratch = scratch_dir()
    rows = {}
    every = [(name, case, 2) for name, case in cases(scratch).items()] + \
        [(name, case, 1) for name, case in data_cases(scratch).items()]
    for name, case, expected in every:
        if args.only in name:
            rows[name] = {"argv": ["python", "-m", *[a.replace(str(scratch), "SCRATCH") for a in case]],
                          "expected_exit": expected, **run_case(case, expected)}
            print(f"{rows[name]['outcome']:>9}  {rows[name]['seconds']:5.1f} s  {name}: {rows[name]['error']}")
    run = record.finish()
    result = {"command": "python -m benchmarks.experiments.cli_inputs" + (f" --only {args.only}" if args.only else ""),
              "run": run, "note": note(run),
              "counts": {"cases": len(rows), "refused": sum(r["outcome"] == "refused" for r in rows.values()),
                         "extra_output": sum(r["outcome"] == "extra output" for r in rows.values()),
                         "tracebacks": sum(r["traceback"] for r in rows.values()),
                         "accepted": sum(r["accepted"] for r in rows.values())},
              "cases": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    return 0 if result["counts"]["refused"] == len(rows) else 1

# -- the results section (benchmarks.readme_results assembles it into the docs) -------------

def section(files: list[dict]) -> str:
    """Issue 33's table of bad command-line values: each refused in one line, none accepted."""
    d = files[0]
    n = d["counts"]
    return (f"**Bad command-line values** (`{d['command']}`, {fmt.shown(d['_file'])}; {d['note']}): {n['cases']} bad "
            f"values given to `rlvr-world` commands and trainers: {n['refused']} refused with exit 2 before any work "
            f"(argparse's usage block, then one error line), {n.get('extra_output', 'uncounted')} with other lines on "
            f"stderr, {n['tracebacks']} tracebacks, {n['accepted']} accepted. Each case and its one-line message: "
            f"`{Path(d['_file']).with_suffix('.md').as_posix()}`.")


SECTIONS = (
    fmt.Section("Bad command-line values", ("cli_inputs.json",), "python -m benchmarks.experiments.cli_inputs", section),
)


if __name__ == "__main__":
    sys.exit(main())
