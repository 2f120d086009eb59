"""The whole RLVR-World pipeline on the embedded PushT default, on a CPU: `rlvr-world demo`.

    rlvr-world demo --out runs/demo            # about 10 minutes on 2 free cores
    rlvr-world demo --out runs/demo_tiny --tiny   # a smoke run (CI)
    rlvr-world demo --domain text --out runs/demo_text   # MiniTextWorld: SFT model -> GRPO (trainers.demo_text)

1. Load the shipped frame tokenizer and MLE single-step world model.
2. Evaluate it on the embedded held-out PushT set (generated once with the real simulator).
3. GRPO post-train it (`trainers.grpo`, on PushT episodes generated once with another seed) for a
   fixed number of steps, on an object-aware verified reward by default (`REWARDS`: -MAE alone pays
   a model for leaving the pusher or the block out of its frame).
4. Evaluate the result on the same held-out transitions with the same sampling seeds.
5. Print a table (pixels: MAE, MSE, PSNR, SSIM, repetition; objects: the agent's and the T-block's
   errors as the success judge reads them; base vs RLVR and RLVR vs copying the last frame, paired
   over transitions) and a verdict by all of them, and write a report folder: report.md,
   results.json (with its run record: machine, load, start/end, commit), grpo_reward.png and
   frames.png (predicted vs real frames of both models).

A fixed step count (not minutes) makes the result a function of the seed: the same command gives the
same numbers on a busy or a quiet machine, only slower. `--grpo-minutes` adds a time limit; a run it
cuts short says so in its report and its verdict.

Planning is not a stage: at a budget that fits here, CEM succeeded on 0 of 4 episodes with
the MLE model, the RLVR model and random actions alike, which shows nothing. It has its own
command (`rlvr-world plan`) and benchmark (`benchmarks.planning_agreement`: whether a learned
simulator ranks CEM's candidates as the real one does, base vs RLVR, with intervals); the
report links their committed results.

Nothing needs a network or a GPU; the budgets are sized for a CPU. `--device` (default auto:
CUDA when present) puts the models, decoding and rewards on a GPU when there is one (larger
runs: `python -m trainers.grpo` directly).
"""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from rlvr_envs.core.files import strict_json, write_json_atomic
from rlvr_envs.video.evaluation import OBJECT_METRICS, SIGNIFICANT_P, better_beyond_noise
from rlvr_envs.video.pusht.physics import ARENA_SIZE
from trainers.common import (command_line, grpo_run, machine_line, parse_dataclass_args, reward_figure,
                             reward_trend, run_command, step_line)

ENV_ID = "RLVRWorld/PushT-SingleStep-v0"
PROGRAM = "rlvr-world demo"  #: the demo's public name (`rlvr-world demo` runs `python -m trainers.demo`)
DOMAINS = ("pusht", "text")
TEXT_REWARDS = ("task", "binary")
#: GRPO steps of each domain's demo, sized to about 10 minutes in all on 2 free cores
DEFAULT_STEPS = {"pusht": 120, "text": 100}
#: the PushT rewards GRPO can post-train on, and what each pays for ({a}, {b}, {c}: the pose weights)
REWARDS = {
    "pose": ("-(MAE + {a:g} x agent position error / arena diagonal + {b:g} x block position error / arena diagonal "
             "+ {c:g} x block angle error / pi) of the decoded frame, the objects read from predicted and real frames "
             "by the success judge: an object left out costs as much as one misplaced across the arena, and the "
             "weights keep the object terms near the scale of the MAE so that neither buys the other"),
    "mae": "-MAE of the decoded frame: pixels only, so it pays for leaving an object out",
}
#: reward="pose": the weights of the agent's position, the block's position and the block's angle errors
DEFAULT_POSE_WEIGHTS = (0.03, 0.03, 0.03)


def reward_kwargs(reward: str, pose_weights: tuple[float, ...] = DEFAULT_POSE_WEIGHTS) -> tuple[str, ...]:
    """The env kwargs of ENV_ID that make `reward` GRPO's reward."""
    if reward == "pose":
        return ("reward=pose", f"pose_weights=[{','.join(f'{w:g}' for w in pose_weights)}]")
    return (f"reward={reward}",)


def reward_text(reward: str, pose_weights: tuple[float, ...] = DEFAULT_POSE_WEIGHTS) -> str:
    return REWARDS[reward].format(**dict(zip("abc", pose_weights)))


@dataclass
class Args:
    domain: str = "pusht"  #: "pusht" (video world model) or "text" (MiniTextWorld, trainers.demo_text)
    out: str = "runs/demo"
    #: GRPO steps, a fixed count (the same numbers on a busy or a quiet machine); 0 = PushT 120, text 100
    grpo_steps: int = 0
    grpo_minutes: float = 0.0  #: also stop GRPO after this many minutes (0 = no limit); a run cut short says so
    reward: str = "pose"  #: --domain pusht: GRPO's reward, "pose" (pixels and objects) or "mae" (pixels only)
    pose_weights: tuple[float, ...] = DEFAULT_POSE_WEIGHTS  #: --reward pose: weights of the agent, block, angle errors
    train_episodes: int = 40  #: PushT episodes GRPO trains on (generated once, seed 20000)
    eval_seeds: int = 2  #: sampling seeds of the held-out evaluation (paired across models, averaged per transition)
    eval_windows: int = 96  #: held-out transitions evaluated
    text_reward: str = "task"  #: --domain text: the GRPO reward, "task" (partial credit) or "binary" (exact match)
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N: where models and rewards run
    tiny: bool = False  #: a smoke run: 2 GRPO steps, 2 training episodes, 4 held-out transitions
    overwrite: bool = False  #: replace the finished demo in --out (without it, a finished demo there is refused)

    def validate(self) -> "Args":
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {self.domain!r}")
        if self.text_reward not in TEXT_REWARDS:
            raise ValueError(f"text_reward must be one of {TEXT_REWARDS}, got {self.text_reward!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {tuple(REWARDS)}, got {self.reward!r}")
        try:
            self.pose_weights = tuple(float(w) for w in self.pose_weights)  # a command line gives text
        except (TypeError, ValueError):
            raise ValueError(f"pose_weights must be 3 numbers, got {self.pose_weights!r}") from None
        if len(self.pose_weights) != 3 or not all(math.isfinite(w) and w >= 0 for w in self.pose_weights) \
                or not sum(self.pose_weights):
            raise ValueError(f"pose_weights must be 3 finite numbers >= 0, not all 0, got {self.pose_weights}")
        if not (math.isfinite(self.grpo_minutes) and self.grpo_minutes >= 0):
            raise ValueError(f"grpo_minutes must be >= 0 (0: no time limit), got {self.grpo_minutes}")
        if self.grpo_steps < 0:
            raise ValueError(f"grpo_steps must be >= 0 (0: the domain's default), got {self.grpo_steps}")
        for name in ("train_episodes", "eval_seeds", "eval_windows", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise ValueError(f"out: {self.out} is a file; pass a folder to write into")
        check_finished_demo(Path(self.out), self.overwrite)
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # an absent or malformed device fails before any work
        return self

    def resolved(self) -> "Args":
        """Validated, with the domain's step count filled in (and the smoke run's sizes for --tiny)."""
        self.validate()
        changes = {"grpo_steps": self.grpo_steps or DEFAULT_STEPS[self.domain]}
        if self.tiny:
            changes.update(grpo_steps=2, train_episodes=2, eval_seeds=1, eval_windows=4)
        return replace(self, **changes)


def check_finished_demo(out: Path, overwrite: bool) -> None:
    """A finished demo's report is never replaced silently: another --out, or --overwrite."""
    if (out / "results.json").is_file() and not overwrite:
        raise ValueError(f"out: {out} holds a finished demo (results.json); pass --overwrite to replace it, or "
                         "choose another --out")


def grpo_config(args: Args, out: Path):
    """The demo's GRPO run (`trainers.grpo`) from the shipped MLE model; `benchmarks.grpo_pusht_rewards`
    runs the same one for each reward and seed."""
    from trainers.grpo_config import GRPOConfig

    return GRPOConfig(env_id=ENV_ID, env_kwargs=reward_kwargs(args.reward, args.pose_weights), out=str(out),
                      steps=args.grpo_steps, max_seconds=60 * args.grpo_minutes, lr=1e-4,
                      train_episodes=args.train_episodes, eval_every=10**9, eval_windows=min(16, args.eval_windows),
                      seed=args.seed, threads=args.threads, device=args.device)


def evaluate(model, task, indices, seeds: int) -> dict[str, dict[str, np.ndarray]]:
    """Per-transition metrics, sampled (T=1, top-k 100, averaged over `seeds`) and greedy."""
    from rlvr_envs.video.evaluation import score_sampled, score_world_model

    return {"sampled": score_sampled(model, task, indices, seeds),
            "greedy": score_world_model(model, task, indices, temperature=0.0)}


#: the metrics the paired tests cover (lower is better but for PSNR and SSIM)
PAIRED = ("mae", "mse", "psnr", "ssim", *OBJECT_METRICS)


def paired(reference: dict[str, np.ndarray], values: dict[str, np.ndarray]) -> dict[str, dict]:
    """values - reference per metric, a paired t-test over transitions."""
    from rlvr_envs.video.evaluation import paired_difference

    return {key: paired_difference(reference[key], values[key]).as_dict()
            for key in PAIRED if key in values and key in reference}


def compare(scores: dict, baselines: dict) -> dict:
    """Each model's summary per mode, with paired tests against the MLE base and against copying
    the last frame (the strongest trivial baseline at 5 simulator steps ahead)."""
    from rlvr_envs.video.evaluation import summarize

    copy_last = baselines["copy_last_frame_tokens"]
    out = {}
    for name, by_mode in scores.items():
        out[name] = {}
        for mode, values in by_mode.items():
            summary = summarize(values)
            if name != "mle_base":
                reference = scores["mle_base"][mode]
                summary["vs_base"] = paired(reference, values)
                summary["mae_change_percent"] = 100 * (summary["mae"] / float(reference["mae"].mean()) - 1)
            summary["vs_copy_last"] = paired(copy_last, values)
            out[name][mode] = summary
    return out


def frames_figure(task, indices, models: dict, path: Path) -> None:
    """Rows: real next frame, then each model's greedy prediction, for a few transitions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rlvr_envs.video.world_model import generate_responses

    shown = indices[:: max(1, len(indices) // 6)][:6]
    prompts = np.stack([task.prompt_ids(i) for i in shown])
    rows = {"real": [task.transition(i).next_state[0] for i in shown]}
    for name, model in models.items():
        responses = generate_responses(model, prompts, task.layout, None, temperature=0.0)
        rows[name] = [task.render_frames(i, r)[: task.tokenizer.config.resolution[0]] for i, r in zip(shown, responses)]
    fig, axes = plt.subplots(len(rows), len(shown), figsize=(1.6 * len(shown), 1.7 * len(rows)), squeeze=False)
    for r, (name, frames) in enumerate(rows.items()):
        for c, frame in enumerate(frames):
            axes[r][c].imshow(frame)
            axes[r][c].set_xticks([])
            axes[r][c].set_yticks([])
        axes[r][0].set_ylabel(name, fontsize=8)
    fig.suptitle("PushT next frame (5 simulator steps ahead): real vs greedy predictions", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


PLANNING_NOTE = ("Planning is not part of the demo: at a budget that fits here CEM succeeds on 0 of 4 episodes "
                 "for the MLE model, the RLVR model and random actions alike. `rlvr-world plan` runs it, and "
                 "`python -m benchmarks.planning_agreement` measures whether each learned simulator ranks CEM's "
                 "candidates as the real simulator does (base vs RLVR, paired, with intervals): see docs/results.md.")


def load_note(run: dict) -> str:
    """A timing taken on a busy machine says so (the load before and after, 1-minute average)."""
    load = run.get("load", {})
    if not load.get("busy"):
        return ""
    return f"; the machine was busy (load {load.get('before')} before, {load.get('after')} after), so times are long"


DIAGONAL_PX = ARENA_SIZE * math.sqrt(2.0)
#: the judge's object errors as the report shows them: (key, name, unit, scale from [0, 1] to the unit)
OBJECT_COLUMNS = (("agent_error", "agent error", "px", DIAGONAL_PX),
                  ("block_error", "block error", "px", DIAGONAL_PX),
                  ("angle_error", "angle error", "deg", 180.0))


def _shown(key: str, value: float) -> str:
    """A metric's value in the report's unit: MAE to 5 decimals, object errors in px or deg."""
    for column, _, unit, scale in OBJECT_COLUMNS:
        if key == column:
            return f"{value * scale:.1f} {unit}"
    return f"{value:.5f}"


def _objects(tests: dict, sign: int) -> list[str]:
    """The object errors that moved in direction `sign` (+1 grew, -1 shrank) beyond noise, as clauses."""
    return [f"{name} {tests[key]['mean'] * scale:+.1f} {unit} (p={tests[key]['p']:.1e})"
            for key, name, unit, scale in OBJECT_COLUMNS
            if key in tests and sign * tests[key]["mean"] > 0 and tests[key]["p"] < SIGNIFICANT_P]


def verdict(results: dict) -> str:
    """What the numbers show, by the pixels and by the objects, against the MLE base and against
    copying the last frame. "A better world model" needs the held-out MAE lower beyond noise and no
    object error grown beyond noise (a pixel metric pays for leaving an object out); "beats copying
    the last frame" needs the same against that baseline. Tests are paired over transitions."""
    sampled = results["models"]["rlvr"]["sampled"]
    base, copy = sampled["vs_base"], sampled["vs_copy_last"]
    mae = base["mae"]
    direction = "lower" if mae["mean"] < 0 else "higher"
    text = (f"GRPO on the {results['grpo_reward']!r} reward moved the held-out sampled MAE "
            f"{abs(sampled['mae_change_percent']):.1f}% {direction} than the MLE base (paired over {mae['n']} "
            f"transitions, p={mae['p']:.1e})")
    grew, shrank = _objects(base, +1), _objects(base, -1)
    if shrank:
        text += f"; the judge reads objects closer to the real ones: {', '.join(shrank)}"
    if grew:
        text += f"; but it reads objects further off: {', '.join(grew)}"
    judged = better_beyond_noise(base, "mae", OBJECT_METRICS)
    if judged["better"]:
        text += ". A better world model than the MLE base, by the pixels and by the objects."
    elif grew:
        text += ". Not a better world model: a lower pixel error bought by losing objects is not one."
    else:
        text += ". Not a better world model beyond noise: the pixels did not improve clearly."
    versus_copy = better_beyond_noise(copy, "mae", ("mae", *OBJECT_METRICS))
    copy_worse = versus_copy["worse"]
    copy_values = results["baselines"]["copy_last_frame_tokens"]
    if versus_copy["better"]:
        text += " It beats copying the last frame, by the pixels and by the objects."
    else:
        where = [f"{key.replace('_', ' ').replace('mae', 'MAE')} {_shown(key, sampled[key])} vs "
                 f"{_shown(key, copy_values[key])}" for key in copy_worse]
        text += (" It does not beat copying the last frame" +
                 (f" (worse beyond noise: {'; '.join(where)})." if where else " beyond noise."))
    if results.get("grpo_shortfall"):
        text += (f" GRPO stopped short of its planned steps ({results['grpo_steps']} of "
                 f"{results['grpo_steps_planned']}).")
    return text


def table(results: dict) -> str:
    objects = [c for c in OBJECT_COLUMNS if c[0] in results["models"]["mle_base"]["sampled"]]

    def row(name: str, mode: str, values: dict, versus: str) -> str:
        cells = [f"{values['mae']:.5f}", f"{values['mse']:.5f}", f"{values['psnr']:.2f}", f"{values['ssim']:.4f}",
                 f"{values['repetition']:.3f}", *(f"{values[key] * scale:.1f}" for key, _, _, scale in objects)]
        return f"| {name} | {mode} | {' | '.join(cells)} | {versus} |"

    lines = ["| model | mode | MAE | MSE | PSNR | SSIM | repetition |"
             + "".join(f" {name} ({unit}) |" for _, name, unit, _ in objects) + " MAE vs base (paired) |",
             "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(objects) + "---|"]
    for name, by_mode in results["models"].items():
        for mode, values in by_mode.items():
            change, test = values.get("mae_change_percent"), values.get("vs_base", {}).get("mae")
            lines.append(row(name, mode, values, "-" if change is None else f"{change:+.1f}% (p={test['p']:.1e})"))
    for name, values in results["baselines"].items():
        lines.append(row(name, "-", values, ""))
    rlvr = results["models"]["rlvr"]["sampled"]
    lines += ["", f"RLVR (sampled) against the MLE base and against copying the last frame, paired over "
              f"{rlvr['vs_base']['mae']['n']} transitions (each transition's sampling seeds averaged; difference, p):",
              "", "| metric | vs MLE base | vs copy-last-frame |", "|---|---|---|"]
    for key in ("mae", *(c[0] for c in objects)):
        cells = []
        for versus in ("vs_base", "vs_copy_last"):
            test = rlvr[versus][key]
            scale = next((c[3] for c in OBJECT_COLUMNS if c[0] == key), 1.0)
            cells.append(f"{test['mean'] * scale:+.{5 if key == 'mae' else 1}f} (p={test['p']:.1e})")
        lines.append(f"| {_label(key)} | {cells[0]} | {cells[1]} |")
    if objects:
        lines += ["", "Object errors are the success judge's reading of the agent disc and the T-block in each "
                  "predicted frame against its reading of the real frame (`rlvr_envs.video.pusht.judge`); an "
                  "object the prediction does not show counts as the arena's diagonal (and 180 degrees)."]
    return "\n".join(lines)


def _label(key: str) -> str:
    return next((f"{name} ({unit})" for column, name, unit, _ in OBJECT_COLUMNS if column == key), "MAE")


def main(args: Args) -> dict:
    """The demo of `args.domain`, holding --out's lock (a second demo on the folder is one line)."""
    from rlvr_envs.core.files import OutputLock

    args = args.resolved()
    with OutputLock(args.out, command_line(PROGRAM, args)):
        check_finished_demo(Path(args.out), args.overwrite)  # again under the lock: another demo may have finished
        if args.domain == "text":
            from trainers import demo_text

            return demo_text.main(args)
        return run_pusht(args)


def run_pusht(args: Args) -> dict:
    """The PushT demo (`main` holds --out's lock)."""
    from baselines.video import score_baselines
    from rlvr_envs.core.device import setup_device
    from rlvr_envs.core.records import RunRecord
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.video.evaluation import held_out_indices, summarize
    from rlvr_envs.video.task import shipped_world_model
    from rlvr_envs.video.world_model import load_world_model
    from trainers import grpo

    device = str(setup_device(args.device, threads=args.threads).device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    record = RunRecord("rlvr-world demo", threads=args.threads)
    print(f"[1/4] loading the shipped PushT tokenizer and MLE world model; held-out set for {ENV_ID}", flush=True)
    # reward="pose" here only makes every evaluation report the judge's object errors beside the pixels
    task = task_from_env_id(ENV_ID, reward="pose", device=device)
    base = shipped_world_model(task)
    indices = held_out_indices(len(task), args.eval_windows)
    print(f"[2/4] evaluating the MLE base on {len(indices)} held-out transitions x {args.eval_seeds} seeds", flush=True)
    scores = {"mle_base": evaluate(base, task, indices, args.eval_seeds)}

    print(f"[3/4] {args.grpo_steps} GRPO steps on the verified reward {args.reward!r}"
          + (f" (at most {args.grpo_minutes} min)" if args.grpo_minutes else ""), flush=True)
    if (out / "grpo").exists():  # the demo's own folder: a new demo replaces the last one's GRPO run
        print(f"      replacing the earlier demo's {out / 'grpo'}", flush=True)
        shutil.rmtree(out / "grpo")
    grpo_record = RunRecord("rlvr-world demo: GRPO", threads=args.threads)
    card = grpo.main(grpo_config(args, out / "grpo"))
    results_run, shortfall = grpo_run(grpo_record, args, card["steps"])
    rlvr = load_world_model(str(out / "grpo"), task.vocab, device=device)

    print("[4/4] evaluating the RLVR model on the same transitions and seeds", flush=True)
    scores["rlvr"] = evaluate(rlvr, task, indices, args.eval_seeds)
    baselines = score_baselines(task, indices)
    results = {"env_id": ENV_ID, "grpo_reward": args.reward, "reward": reward_text(args.reward, args.pose_weights),
               "held_out_transitions": len(indices), "sampling_seeds": args.eval_seeds,
               "grpo_steps": card["steps"], "grpo_steps_planned": args.grpo_steps,
               "grpo_seconds": card["train_seconds_this_run"], "models": compare(scores, baselines),
               "baselines": {name: summarize(values) for name, values in baselines.items()}}
    results.update(total_seconds=round(time.perf_counter() - started, 1), args=asdict(args),
                   command=command_line(PROGRAM, args), run=record.finish(), grpo_run=results_run,
                   grpo_shortfall=shortfall)
    results["machine"] = machine_line(results["run"], results_run) + f", {'CPU' if device == 'cpu' else device}"
    frames_figure(task, indices, {"MLE base": base, "RLVR (GRPO)": rlvr}, out / "frames.png")
    reward_figure(out / "grpo" / "log.jsonl", out / "grpo_reward.png", ylabel=f"reward ({args.reward})")
    trend = reward_trend(out / "grpo" / "log.jsonl")
    steps = step_line(card["steps"], card["train_seconds_this_run"])
    report = (f"# rlvr-world demo\n\n`{results['command']}` on {results['machine']}, "
              f"{results['total_seconds'] / 60:.1f} min in all ({steps}){load_note(results['run'])}.\n\n"
              f"GRPO reward ({args.reward}): {reward_text(args.reward, args.pose_weights)}.\n\n"
              + (f"**{shortfall}.**\n\n" if shortfall else "") + f"{table(results)}\n\n{verdict(results)}\n\n"
              f"{trend}\n\n![frames](frames.png)\n\n![reward](grpo_reward.png)\n\n{PLANNING_NOTE}\n")
    (out / "report.md").write_text(report, encoding="utf-8")
    write_json_atomic(out / "results.json", strict_json(results))  # last: it marks the demo finished
    print(table(results))
    print(verdict(results))
    print(trend)
    print(PLANNING_NOTE)
    if shortfall:
        print(shortfall)
    print(f"demo took {results['total_seconds'] / 60:.1f} min; report: {out / 'report.md'}")
    return results


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv, prog=PROGRAM)


if __name__ == "__main__":
    run_command(main, parse_args, PROGRAM)
