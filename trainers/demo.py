"""The whole RLVR-World pipeline on the embedded PushT default, on a CPU: `rlvr-world demo`.

    rlvr-world demo --out runs/demo            # about 10 minutes on 2 free cores
    rlvr-world demo --out runs/demo_tiny --tiny   # a smoke run (CI)
    rlvr-world demo --domain text --out runs/demo_text   # MiniTextWorld: SFT model -> GRPO (trainers.demo_text)

1. Load the shipped frame tokenizer and MLE single-step world model.
2. Evaluate it on the embedded held-out PushT set (generated once with the real simulator).
3. GRPO post-train it on the verified reward, -MAE of the decoded frame (`trainers.grpo`,
   on PushT episodes generated once with another seed) for `--grpo-minutes`.
4. Evaluate the result on the same held-out transitions with the same sampling seeds.
5. Print a table (MAE, MSE, PSNR, SSIM, repetition; base vs RLVR, with paired t-tests, beside
   the copy-last-frame baseline and the tokenizer's ceiling) and write a report folder:
   report.md, results.json (with its run record: machine, load, start/end, commit),
   grpo_reward.png and frames.png (predicted vs real frames of both models).

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

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rlvr_envs.core.files import strict_json
from rlvr_envs.video.pusht.physics import ARENA_SIZE
from trainers.common import command_line, grpo_run, machine_line, parse_dataclass_args, reward_figure, step_line

ENV_ID = "RLVRWorld/PushT-SingleStep-v0"
METRICS = ("mae", "mse", "psnr", "ssim", "repetition")


DOMAINS = ("pusht", "text")
UNCAPPED_STEPS = 10**6  #: GRPO's step limit when only the minutes bound it
TEXT_REWARDS = ("task", "binary")


@dataclass
class Args:
    domain: str = "pusht"  #: "pusht" (video world model) or "text" (MiniTextWorld, trainers.demo_text)
    out: str = "runs/demo"
    grpo_minutes: float = 7.0  #: GRPO training time (generation + updates)
    grpo_steps: int = 0  #: at most this many GRPO steps; 0 = as many as --grpo-minutes allow on this machine
    train_episodes: int = 40  #: PushT episodes GRPO trains on (generated once, seed 20000)
    eval_seeds: int = 2  #: sampling seeds of the held-out evaluation (paired across models)
    eval_windows: int = 96  #: held-out transitions evaluated
    text_reward: str = "task"  #: --domain text: the GRPO reward, "task" (partial credit) or "binary" (exact match)
    seed: int = 0
    threads: int = 2
    device: str = "auto"  #: auto (CUDA when present), cpu, cuda or cuda:N: where models and rewards run
    tiny: bool = False  #: a smoke run: 2 GRPO steps, 2 training episodes, 4 held-out transitions

    def validate(self) -> "Args":
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {self.domain!r}")
        if self.text_reward not in TEXT_REWARDS:
            raise ValueError(f"text_reward must be one of {TEXT_REWARDS}, got {self.text_reward!r}")
        if not (math.isfinite(self.grpo_minutes) and self.grpo_minutes > 0):
            raise ValueError(f"grpo_minutes must be > 0, got {self.grpo_minutes}")
        if self.grpo_steps < 0:
            raise ValueError(f"grpo_steps must be >= 0 (0: as many as the minutes allow), got {self.grpo_steps}")
        for name in ("train_episodes", "eval_seeds", "eval_windows", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise ValueError(f"out: {self.out} is a file; pass a folder to write into")
        from rlvr_envs.core.device import resolve_device

        resolve_device(self.device)  # an absent or malformed device fails before any work
        return self

    @property
    def step_cap(self) -> int:
        """The GRPO trainer's step limit: --grpo-steps, or (0) none below the time limit."""
        return self.grpo_steps or UNCAPPED_STEPS

    def resolved(self) -> "Args":
        self.validate()
        if self.tiny:
            return Args(domain=self.domain, out=self.out, grpo_minutes=self.grpo_minutes, grpo_steps=2,
                        train_episodes=2, eval_seeds=1, eval_windows=4, text_reward=self.text_reward, seed=self.seed,
                        threads=self.threads, device=self.device, tiny=True)
        return self


def evaluate(model, task, indices, seeds: int) -> dict[str, dict[str, np.ndarray]]:
    from rlvr_envs.video.evaluation import score_world_model

    sampled = [score_world_model(model, task, indices, seed=1000 * s, temperature=1.0, top_k=100)
               for s in range(seeds)]
    return {"sampled": {k: np.concatenate([x[k] for x in sampled]) for k in sampled[0]},
            "greedy": score_world_model(model, task, indices, temperature=0.0)}


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


#: the judge's object errors as the report shows them: (key, column, scale to the unit shown)
OBJECT_COLUMNS = (("block_error", "block error (px)", ARENA_SIZE * math.sqrt(2.0)),
                  ("angle_error", "angle error (deg)", 180.0))
#: a paired object-error increase with p below this counts as the object getting worse
OBJECT_WORSE_P = 0.05


def object_change(sampled: dict) -> tuple[bool, str]:
    """Whether the T-block, as the judge reads it from predicted vs real frames, got worse (a
    paired increase of its position or angle error beyond noise), and a clause that says how."""
    parts, worse = [], False
    for key, column, scale in OBJECT_COLUMNS:
        test = sampled["vs_base"].get(key)
        if test is None:
            continue
        grew = test["mean"] > 0 and test["p"] < OBJECT_WORSE_P
        worse |= grew
        parts.append(f"{column.split(' (')[0]} {test['mean'] * scale:+.1f} {column.split('(')[1][:-1]} "
                     f"(p={test['p']:.1e})")
    return worse, ", ".join(parts)


def verdict(results: dict) -> str:
    """One sentence on what the numbers show: the paired MAE change, whether it clears noise, and
    whether the object the frames show got better or worse (a lower pixel MAE can come from
    drawing the block fainter or smaller: "a better world model" needs both)."""
    sampled = results["models"]["rlvr"]["sampled"]
    test = sampled["vs_base"]["mae"]
    direction = "lower" if sampled["mae_change_percent"] < 0 else "higher"
    strength = "a paired difference well beyond sampling noise" if test["p"] < 0.01 else \
        "not clearly beyond sampling noise at this budget"
    pixels = (f"GRPO on -MAE moved the held-out sampled MAE {abs(sampled['mae_change_percent']):.1f}% {direction} "
              f"than the MLE base (paired over the same transitions and seeds, p={test['p']:.1e}): {strength}")
    worse, how = object_change(sampled)
    if not how:
        return pixels + "."
    if worse:
        return (f"{pixels}; but the T-block, read by the judge from predicted and real frames, got worse ({how}): "
                "the pixel change is not a better world model.")
    better = direction == "lower" and test["p"] < 0.01
    return (f"{pixels}; the T-block's errors did not grow beyond noise ({how})"
            + (": a better world model by the pixels and by the object." if better else "."))


def table(results: dict) -> str:
    objects = [(key, column, scale) for key, column, scale in OBJECT_COLUMNS
               if key in results["models"]["mle_base"]["sampled"]]

    def object_cells(values: dict) -> str:
        return "".join(f" {values[key] * scale:.1f} |" for key, _, scale in objects)

    lines = ["| model | mode | MAE | MSE | PSNR | SSIM | repetition |" + "".join(f" {c} |" for _, c, _ in objects)
             + " MAE vs base (paired) |", "|---|---|---|---|---|---|---|" + "---|" * len(objects) + "---|"]
    for name, by_mode in results["models"].items():
        for mode, values in by_mode.items():
            change = values.get("mae_change_percent")
            test = values.get("vs_base", {}).get("mae")
            versus = "-" if change is None else f"{change:+.1f}% (p={test['p']:.1e})"
            lines.append(f"| {name} | {mode} | {values['mae']:.5f} | {values['mse']:.5f} | {values['psnr']:.2f} | "
                         f"{values['ssim']:.4f} | {values['repetition']:.3f} |{object_cells(values)} {versus} |")
    for name, values in results["baselines"].items():
        lines.append(f"| {name} | - | {values['mae']:.5f} | {values['mse']:.5f} | {values['psnr']:.2f} | "
                     f"{values['ssim']:.4f} | {values['repetition']:.3f} |{object_cells(values)} |")
    if objects:
        lines += ["", "Block errors are the judge's reading of the T-block in each predicted frame against its "
                  "reading of the real frame (`rlvr_envs.video.pusht.judge`); a block the prediction does not "
                  "show counts as the arena's diagonal and 180 degrees."]
    return "\n".join(lines)


def main(args: Args) -> dict:
    from baselines.video import score_baselines
    from rlvr_envs.core.records import RunRecord
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.video.evaluation import OBJECT_METRICS, held_out_indices, paired_difference, summarize
    from rlvr_envs.video.task import shipped_world_model
    from rlvr_envs.video.world_model import load_world_model
    from trainers import grpo
    from trainers.grpo_config import GRPOConfig

    args = args.resolved()
    if args.domain == "text":
        from trainers import demo_text

        return demo_text.main(args)
    from rlvr_envs.core.device import setup_device

    device = str(setup_device(args.device, threads=args.threads).device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    record = RunRecord("rlvr-world demo", threads=args.threads)
    print(f"[1/4] loading the shipped PushT tokenizer and MLE world model; held-out set for {ENV_ID}", flush=True)
    # reward="pose" only adds the judge's object errors to each evaluation's metrics (GRPO trains on -MAE)
    task = task_from_env_id(ENV_ID, reward="pose", device=device)
    base = shipped_world_model(task)
    indices = held_out_indices(len(task), args.eval_windows)
    print(f"[2/4] evaluating the MLE base on {len(indices)} held-out transitions x {args.eval_seeds} seeds", flush=True)
    scores = {"mle_base": evaluate(base, task, indices, args.eval_seeds)}

    print(f"[3/4] GRPO on the verified reward for {args.grpo_minutes} min"
          + (f" or {args.grpo_steps} steps" if args.grpo_steps else ""), flush=True)
    if (out / "grpo").exists():  # the demo's own folder: a new demo replaces the last one's GRPO run
        print(f"      replacing the earlier demo's {out / 'grpo'}", flush=True)
        shutil.rmtree(out / "grpo")
    grpo_args = GRPOConfig(env_id=ENV_ID, env_kwargs=("reward=mae",), out=str(out / "grpo"), steps=args.step_cap,
                           max_seconds=60 * args.grpo_minutes, lr=1e-4, train_episodes=args.train_episodes,
                           eval_every=10**9, eval_windows=min(16, args.eval_windows), seed=args.seed,
                           threads=args.threads, device=args.device)
    grpo_record = RunRecord("rlvr-world demo: GRPO", threads=args.threads)
    card = grpo.main(grpo_args)
    results_run, shortfall = grpo_run(grpo_record, args, card["steps"])
    rlvr = load_world_model(str(out / "grpo"), task.vocab, device=device)

    print("[4/4] evaluating the RLVR model on the same transitions and seeds", flush=True)
    scores["rlvr"] = evaluate(rlvr, task, indices, args.eval_seeds)
    results = {"env_id": ENV_ID, "reward": "-MAE of the decoded frame", "held_out_transitions": len(indices),
               "sampling_seeds": args.eval_seeds, "grpo_steps": card["steps"],
               "grpo_seconds": card["train_seconds_this_run"], "models": {},
               "baselines": {k: summarize(v) for k, v in score_baselines(task, indices).items()}}
    for name, by_mode in scores.items():
        results["models"][name] = {}
        for mode, values in by_mode.items():
            summary = summarize(values)
            if name != "mle_base":
                reference = scores["mle_base"][mode]
                summary["vs_base"] = {k: paired_difference(reference[k], values[k]).as_dict()
                                      for k in ("mae", "mse", "psnr", "ssim", *OBJECT_METRICS) if k in values}
                summary["mae_change_percent"] = 100 * (summary["mae"] / float(reference["mae"].mean()) - 1)
            results["models"][name][mode] = summary
    results.update(total_seconds=round(time.perf_counter() - started, 1), args=asdict(args),
                   command=command_line("rlvr-world demo", args), run=record.finish(), grpo_run=results_run,
                   grpo_shortfall=shortfall)
    results["machine"] = machine_line(results["run"], results_run) + f", {'CPU' if device == 'cpu' else device}"
    (out / "results.json").write_text(json.dumps(strict_json(results), indent=2) + "\n", encoding="utf-8")
    frames_figure(task, indices, {"MLE base": base, "RLVR (GRPO)": rlvr}, out / "frames.png")
    reward_figure(out / "grpo" / "log.jsonl", out / "grpo_reward.png")
    report = (f"# rlvr-world demo\n\n`{results['command']}` on {results['machine']}, "
              f"{results['total_seconds'] / 60:.1f} min in all ({step_line(card['steps'], card['train_seconds_this_run'])})"
              f"{load_note(results['run'])}.\n\n"
              + (f"**{shortfall}.**\n\n" if shortfall else "") + f"{table(results)}\n\n"
              f"{verdict(results)}\n\n![frames](frames.png)\n\n![reward](grpo_reward.png)\n\n{PLANNING_NOTE}\n")
    (out / "report.md").write_text(report, encoding="utf-8")
    print(table(results))
    print(verdict(results))
    print(PLANNING_NOTE)
    if shortfall:
        print(shortfall)
    print(f"report: {out / 'report.md'}")
    return results


def parse_args(argv: list[str] | None = None) -> Args:
    return parse_dataclass_args(Args, __doc__.splitlines()[0], argv)


if __name__ == "__main__":
    main(parse_args())
