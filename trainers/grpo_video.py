"""GRPO for video world models: a readable loop of our own (called by `trainers.grpo`).

    python -m trainers.grpo --env-id RLVRWorld/PushT-SingleStep-v0 --env-kwargs reward=mae --out runs/grpo_pusht

Each step: pick `prompts_per_step` training transitions, sample `group_size` responses for
each with the KV cache (multi-step: the env's given action tokens are forced after every
generated frame, exactly as the env does), score them with the env's own verifier (one
batched decode and metric call), turn rewards into group-relative advantages, and take
`updates_per_step` clipped policy-gradient steps with a KL penalty (k3 estimator) against
the frozen starting model. The loss is TRL's `GRPOTrainer` loss term for term (tested on a
fixed batch; `--algorithm rloo`: TRL's `RLOOTrainer` loss and leave-one-out advantages,
also tested), with two differences that TRL's generation cannot express: forced action
tokens carry no loss, and log-probabilities are taken over the frame codes only, the
distribution the sampler actually draws from.

Groups whose rewards are all equal have zero advantage and teach nothing but the KL term;
they are dropped from the update and their fraction is logged (`zero_spread`).

Checkpoints (`out/checkpoint/`: model, optimizer, step, history) are written every
`checkpoint_every` steps by replacing the previous one only once the new one is complete,
so a run killed at any moment resumes with `--resume` from its last checkpoint. The final
model is saved in `out/` with a card (`card.json`: command, args, held-out metrics of the
starting model and of the result, wall time), and the checkpoint is then deleted: a finished
run is final. `--resume` on it (or a run into it without `--resume`) is refused in one line;
to train further, start a new run from it (`--model OUT --out NEW`). `--resume` on a folder
holding no run is refused too (`trainers.common.check_run_folder`, the contract of every trainer).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch

from rlvr_envs.core.files import json_line, keep_log_until, load_torch_file
from rlvr_envs.core.groups import group_advantages
from rlvr_envs.core.run_clock import RunClock
from trainers.common import RESUME_REMEDY, adamw, command_line, lora_config, owns_run_folder, resume_line

#: seed of the PushT episodes GRPO trains on when no data_dir is given (held-out set: 10000)
TRAIN_EPISODES_SEED = 20_000
EVAL_TOP_K = 100  # the paper's evaluation sampling


def grpo_loss(logps: torch.Tensor, old_logps: torch.Tensor, ref_logps: torch.Tensor | None,
              advantages: torch.Tensor, mask: torch.Tensor, clip: float, beta: float, loss_type: str,
              max_len: int) -> tuple[torch.Tensor, dict[str, float]]:
    """TRL's GRPO loss (token-level importance ratio, two-sided clip, k3 KL) for [B, R]
    per-token log-probs, [B] advantages and a [B, R] mask of the tokens that carry loss.

    Aggregation by `loss_type`: "grpo" averages each sequence then the batch; "bnpo" and
    "dapo" average over all tokens of the batch (one process, no accumulation); "dr_grpo"
    divides the token sum by batch * `max_len`.
    """
    mask = mask.to(logps.dtype)
    ratio = torch.exp(logps - old_logps)
    clipped = torch.clamp(ratio, 1 - clip, 1 + clip)
    adv = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl = torch.zeros_like(logps)
    if beta != 0.0:
        if ref_logps is None:
            raise ValueError("beta > 0 needs the reference model's log-probs")
        kl = torch.exp(ref_logps - logps) - (ref_logps - logps) - 1
        per_token = per_token + beta * kl
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type in ("bnpo", "dapo"):
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = (per_token * mask).sum() / (per_token.size(0) * max_len)
    else:
        raise ValueError(f"unknown loss_type {loss_type!r}")
    tokens = mask.sum().clamp(min=1.0)
    is_clipped = ((ratio < 1 - clip) & (adv < 0)) | ((ratio > 1 + clip) & (adv > 0))
    stats = {"kl": float((kl.detach() * mask).sum() / tokens),
             "clip_fraction": float((is_clipped * mask).sum() / tokens)}
    return loss, stats


def rloo_advantages(rewards: torch.Tensor, kl: torch.Tensor | None = None, beta: float = 0.0) -> torch.Tensor:
    """[P, G] rewards -> [P, G] RLOO advantages (TRL's `RLOOTrainer`, normalize_advantages=False):
    the reward minus `beta` x the sequence's KL to the reference (`kl` [P, G]: the sum over
    loss tokens of old - ref log-probs), minus the mean of the group's other samples."""
    if beta != 0.0:
        if kl is None:
            raise ValueError("beta > 0 needs each sequence's KL to the reference")
        rewards = rewards - beta * kl
    group = rewards.shape[1]
    baselines = (rewards.sum(dim=1, keepdim=True) - rewards) / (group - 1)
    return rewards - baselines


def rloo_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor,
              mask: torch.Tensor, clip: float) -> tuple[torch.Tensor, dict[str, float]]:
    """TRL's RLOO loss: a sequence-level importance ratio (exp of the summed log-prob change
    over loss tokens), two-sided clip, mean over sequences; the KL is in the advantages."""
    mask = mask.to(logps.dtype)
    ratio = torch.exp(((logps - old_logps) * mask).sum(1))
    clipped = torch.clamp(ratio, 1 - clip, 1 + clip)
    loss = -torch.min(ratio * advantages, clipped * advantages).mean()
    is_clipped = ((ratio < 1 - clip) & (advantages < 0)) | ((ratio > 1 + clip) & (advantages > 0))
    return loss, {"clip_fraction": float(is_clipped.float().mean())}


def response_logps(model, prompts: torch.Tensor, responses: torch.Tensor, frame_codes: int,
                   temperature: float) -> torch.Tensor:
    """[B, R] log-probabilities of each response token under the model's frame-code
    distribution at `temperature` (forced action positions get garbage; mask them)."""
    sequence = torch.cat([prompts, responses], dim=1)
    length = responses.shape[1]
    logits = model(input_ids=sequence, logits_to_keep=length + 1).logits[:, :-1]
    logps = torch.log_softmax(logits[..., :frame_codes].float() / temperature, dim=-1)
    return logps.gather(-1, responses.clamp(max=frame_codes - 1).unsqueeze(-1)).squeeze(-1)


# -- tasks and models ------------------------------------------------------------------
def _env_kwargs(args, device: torch.device | str) -> dict:
    """`gym.make`'s arguments for `args.env_id`: the registry's, the device, then the user's `--env-kwargs`."""
    from rlvr_envs.registration import entry

    return {**entry(args.env_id).kwargs, "device": str(device), **args.kwargs()}


def build_held_out(args, device: torch.device | str = "cpu"):
    """The held-out task (tokenizer, decoding and rewards on `device`): `data_dir`'s test split,
    or the env's embedded held-out set."""
    from rlvr_envs.registration import task_from_env_id

    kwargs = _env_kwargs(args, device)
    if "data_dir" in kwargs:
        kwargs["split"] = "test"
    return task_from_env_id(args.env_id, **kwargs)


def build_training(args, held_out, device: torch.device | str = "cpu"):
    """The training task: `data_dir`'s train split, or PushT episodes generated once (seed
    20000). Training windows start at every frame and every phase of the frame skip."""
    from rlvr_envs.registration import task_from_env_id
    from rlvr_envs.video.task import pusht_episodes_dir

    kwargs = _env_kwargs(args, device)
    if "data_dir" in kwargs:
        kwargs["split"] = "train"
    else:
        resolution = held_out.tokenizer.config.resolution[0]
        kwargs["data_dir"] = pusht_episodes_dir(args.train_episodes, resolution, seed=TRAIN_EPISODES_SEED)
    kwargs.update(frame_offsets=tuple(range(held_out.config.frame_skip)), window_stride=1)
    return task_from_env_id(args.env_id, **kwargs)


def build_rollout_training(args, held_out):
    """The training task of `--video-prompts`: the file's windows (the model's own rollouts and
    the real next frames), scored like the held-out task; a file made with another tokenizer
    or for another layout fails here."""
    from trainers.rollout_prompts import load_rollout_prompts

    loaded = load_rollout_prompts(args.video_prompts)
    made_with = Path(loaded["meta"].get("tokenizer", "")).resolve()
    if made_with != Path(held_out.tokenizer_dir).resolve():
        raise ValueError(f"{args.video_prompts} was made with the tokenizer at {made_with}, but {args.env_id} uses "
                         f"{held_out.tokenizer_dir}")
    return held_out.with_windows(loaded["prompts"], loaded["truth"], loaded["uids"])


def load_start_model(args, task):
    """The model GRPO starts from (and, frozen, its KL reference): `--model`, else the
    env's `model=`, else (PushT) the shipped MLE model of the layout."""
    from rlvr_envs.video.task import shipped_world_model

    return shipped_world_model(task, args.model or None)


def start_model_dir(args, task) -> str:
    from rlvr_envs.video.task import shipped_world_model_dir

    return args.model or task.config.model or str(shipped_world_model_dir(task.config.layout))


def _with_lora(model, args):
    from peft import get_peft_model

    return get_peft_model(model, lora_config(args.lora_r, args.lora_alpha))


def evaluate(model, task, indices: list[int], seed: int) -> dict[str, dict[str, float]]:
    """Held-out means of greedy and sampled (temperature 1, top-k 100) responses."""
    from rlvr_envs.video.evaluation import score_world_model, summarize

    return {"greedy": summarize(score_world_model(model, task, indices, seed=seed, temperature=0.0)),
            "sampled": summarize(score_world_model(model, task, indices, seed=seed, temperature=1.0,
                                                   top_k=EVAL_TOP_K))}


# -- checkpoints -------------------------------------------------------------------------
def save_checkpoint(out: Path, model, optimizer, step: int, history: list, started_from: str) -> None:
    """Write `out/checkpoint` whole, then swap it in: a kill at any moment leaves one intact."""
    fresh, current, old = out / "checkpoint.tmp", out / "checkpoint", out / "checkpoint.old"
    shutil.rmtree(fresh, ignore_errors=True)
    model.save_pretrained(fresh)
    torch.save({"optimizer": optimizer.state_dict(), "step": step, "history": history,
                "started_from": started_from}, fresh / "state.pt")
    shutil.rmtree(old, ignore_errors=True)
    if current.exists():
        os.replace(current, old)
    os.replace(fresh, current)
    shutil.rmtree(old, ignore_errors=True)


def find_checkpoint(out: Path) -> Path | None:
    for candidate in (out / "checkpoint", out / "checkpoint.old"):
        if (candidate / "state.pt").is_file():
            return candidate
    return None


# -- the loop ----------------------------------------------------------------------------
@owns_run_folder("--model")
def train(args) -> dict:
    from tqdm.auto import tqdm

    from rlvr_envs.video.evaluation import held_out_indices
    from rlvr_envs.video.world_model import generate_responses, save_world_model
    from trainers.distributed import machine_line, start_run

    args.validate()
    torch.manual_seed(args.seed)
    run = start_run(args.device, args.precision, args.threads)
    group, per_step = args.group_size, args.prompts_per_step
    chunk = args.generation_batch or per_step // run.world  # prompts per generate call
    if per_step % chunk or (per_step // chunk) % run.world:
        raise ValueError(f"--prompts-per-step {per_step} must split into calls of --generation-batch {chunk} "
                         f"prompts, shared evenly by {run.world} process(es)")
    say = print if run.is_main else (lambda *a, **k: None)
    out = Path(args.out)
    log_path = out / "log.jsonl"
    run.wait()  # every rank has checked the folder (args.validate) before rank 0 writes to it
    if run.is_main:
        out.mkdir(parents=True, exist_ok=True)
    say(f"building tasks for {args.env_id} on {run.describe()} ...", flush=True)
    held_out = build_held_out(args, run.device)
    reference = load_start_model(args, held_out)  # a vocabulary mismatch fails here, before the long part
    reference.requires_grad_(False)
    started_from = start_model_dir(args, held_out)
    train_task = build_rollout_training(args, held_out) if args.video_prompts else \
        build_training(args, held_out, run.device)
    layout, frame_codes = train_task.layout, train_task.vocab.frame_codes
    eval_indices = held_out_indices(len(held_out), args.eval_windows)
    say(f"{len(train_task)} training transitions, {len(eval_indices)} held-out; {per_step} prompts x {group} "
        f"samples per step", flush=True)

    checkpoint = find_checkpoint(out) if args.resume else None
    step, history = 0, []
    if checkpoint is not None:
        state = load_torch_file(checkpoint / "state.pt", "the GRPO training state", RESUME_REMEDY)
        if state["started_from"] != started_from:
            raise ValueError(f"{checkpoint} continues a run that started from {state['started_from']}, "
                             f"not {started_from}")
        if args.lora_r:
            from peft import PeftModel

            model = PeftModel.from_pretrained(load_start_model(args, train_task), checkpoint, is_trainable=True)
        else:
            from rlvr_envs.video.world_model import load_world_model

            model = load_world_model(str(checkpoint), train_task.vocab)
        step, history = int(state["step"]), list(state["history"])
        say(resume_line(out, checkpoint, step), flush=True)
    else:
        if args.resume:
            say(resume_line(out, None, 0), flush=True)
        model = load_start_model(args, train_task)
        if args.lora_r:
            model = _with_lora(model, args)
        state = None
    model.to(run.device)  # before the optimizer loads its state, so the state lands on the device too
    if run.is_main:
        keep_log_until(log_path, step)  # steps after the checkpoint are run again: log them once
    optimizer = adamw([p for p in model.parameters() if p.requires_grad], run.device, lr=args.lr,
                                  weight_decay=0.0, betas=(0.9, 0.99))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
    policy = model  # generation, evaluation and saving use the plain model; updates go through DDP
    model, optimizer = run.prepare(model, optimizer)
    writer = None
    if args.logging == "tensorboard" and run.is_main:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(out / "tensorboard"))

    if not history and run.is_main:
        base = evaluate(reference, held_out, eval_indices, args.seed)
        history.append({"step": 0, "eval": base})
        print(f"start: greedy MAE {base['greedy']['mae']:.5f}, sampled MAE {base['sampled']['mae']:.5f}", flush=True)
    loss_mask = torch.as_tensor(layout.loss_mask()).to(run.device)
    log = log_path.open("a", encoding="utf-8") if run.is_main else None
    started, failures = time.perf_counter(), 0
    clock = RunClock(args.max_seconds, args.end_at)
    bar = tqdm(total=args.steps, initial=step, desc=f"GRPO {args.env_id.split('/')[-1]}", unit="step",
               disable=not run.is_main)
    while step < args.steps:
        if run.agree(clock.time_to_stop()):
            bar.write(f"stopping at step {step}: the next step (~{clock.predicted_step():.2f} s) would pass the "
                      f"time limit")
            break
        tick = time.perf_counter()
        rng = np.random.default_rng([args.seed, step])
        picked = rng.choice(len(train_task), size=per_step, replace=len(train_task) < per_step)
        step_seed = int(rng.integers(2**31))
        # this rank's calls: call c samples prompts picked[c*chunk:(c+1)*chunk] with seed step_seed + c,
        # whatever the number of processes, so 1 and N processes draw the same samples
        calls = run.shard(list(range(per_step // chunk)))
        mine = np.concatenate([picked[c * chunk:(c + 1) * chunk] for c in calls])
        indices = np.repeat(mine, group)
        prompts = torch.as_tensor(np.stack([train_task.prompt_ids(int(i)) for i in indices]))
        given = None if train_task.given_action_tokens(int(mine[0])) is None else \
            np.stack([train_task.given_action_tokens(int(i)) for i in indices])
        policy.eval()
        rows = chunk * group
        with run.precision.autocast():
            responses = np.concatenate([
                generate_responses(policy, prompts[k * rows:(k + 1) * rows], layout,
                                   None if given is None else given[k * rows:(k + 1) * rows],
                                   temperature=args.temperature, top_k=args.top_k or None, seed=step_seed + c)
                for k, c in enumerate(calls)])
        error = None
        try:
            results = train_task.verify(indices.tolist(), list(responses))
        except Exception as exc:  # a verifier failure costs this step, never the run
            error = f"{type(exc).__name__}: {exc}"
        if run.agree(error is not None):  # every rank skips the step together
            failures += 1
            step += 1
            bar.update(1)
            if run.is_main:
                log.write(json_line({"step": step, "reward_failure": error or "on another process",
                                     "reward_failures": failures}))
                log.flush()
            continue
        rewards = torch.tensor([r.reward for r in results], dtype=torch.float32).view(len(mine), group)
        advantages = group_advantages(rewards, scale=args.loss_type != "dr_grpo").reshape(-1)  # GRPO's
        spread = (rewards.std(dim=1) > 0).repeat_interleave(group)
        generated = time.perf_counter()
        everyone = run.gather(rewards)  # [per_step, G]: the step's rewards over all processes, for the log
        repetition = run.gather(torch.tensor([r.metrics.get("repetition", 0.0) for r in results]))
        record = {"step": step + 1, "reward": float(everyone.mean()), "reward_std": float(everyone.std(dim=1).mean()),
                  "zero_spread": float((everyone.std(dim=1) == 0).float().mean()),
                  "repetition": float(repetition.mean())}
        if run.agree(bool(spread.any())):
            keep = spread.nonzero().squeeze(1)
            weight = 1.0
            if len(keep) == 0:  # nothing to learn here, but DDP needs this process's (zero) gradient
                keep, weight = torch.arange(group), 0.0  # one whole group, weighted 0
            batch_prompts = prompts[keep].to(run.device)
            batch_responses = torch.as_tensor(responses)[keep].to(run.device)
            mask = loss_mask.unsqueeze(0).expand(len(keep), -1)
            with torch.no_grad(), run.precision.autocast():
                # one update per batch: the sampling policy is the current one (TRL skips this forward too)
                rloo = args.algorithm == "rloo"
                old = None if args.updates_per_step == 1 and not (rloo and args.beta) else \
                    response_logps(policy, batch_prompts, batch_responses, frame_codes, args.temperature)
                ref = None if not args.beta else \
                    response_logps(reference, batch_prompts, batch_responses, frame_codes, args.temperature)
                if rloo:  # whole groups are kept, so the kept rewards regroup as [groups, G]
                    kl = None if ref is None else ((old - ref) * mask).sum(1).view(-1, group)
                    advantages_kept = rloo_advantages(rewards.reshape(-1)[keep].view(-1, group).to(run.device), kl,
                                                      args.beta).reshape(-1)
                else:
                    advantages_kept = advantages[keep].to(run.device)
            # the loss averages over this process's units (sequences, or tokens for bnpo/dapo): weigh it so
            # DDP's average over processes is the average over every process's units (1.0 on one process)
            units = float(mask.sum()) if args.loss_type in ("bnpo", "dapo") and not rloo else float(len(keep))
            scale = run.global_scale(units * weight) if run.world > 1 else weight
            model.train()
            for _ in range(args.updates_per_step):
                with run.precision.autocast():
                    logps = response_logps(model, batch_prompts, batch_responses, frame_codes, args.temperature)
                old = logps.detach() if old is None else old
                if rloo:
                    loss, stats = rloo_loss(logps, old, advantages_kept, mask, args.clip)
                else:
                    loss, stats = grpo_loss(logps, old, ref, advantages_kept, mask, args.clip, args.beta,
                                            args.loss_type, layout.response_len)
                optimizer.zero_grad(set_to_none=True)
                run.backward(loss * scale if scale != 1.0 else loss)
                run.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            record.update(loss=float(loss.detach()), **stats)
        step += 1
        record.update(generate_seconds=generated - tick, update_seconds=time.perf_counter() - generated,
                      seconds=time.perf_counter() - started)
        clock.step_done(time.perf_counter() - tick)  # its own seconds: the evaluations below are not a step's
        bar.update(1)
        bar.set_postfix(reward=f"{record['reward']:.4f}", zero_spread=f"{record['zero_spread']:.2f}")
        if not run.is_main:
            continue
        if step % args.eval_every == 0 or step == args.steps:
            report = evaluate(policy, held_out, eval_indices, args.seed)
            history.append({"step": step, "eval": report})
            record["eval"] = report
            bar.write(f"step {step}: held-out greedy MAE {report['greedy']['mae']:.5f}, sampled MAE "
                      f"{report['sampled']['mae']:.5f} (start {history[0]['eval']['sampled']['mae']:.5f})")
        log.write(json_line(record))
        log.flush()
        if writer is not None:
            for key, value in record.items():
                if isinstance(value, float):
                    writer.add_scalar(f"train/{key}", value, step)
        if step % args.checkpoint_every == 0 and step < args.steps:
            save_checkpoint(out, policy, optimizer, step, history, started_from)
    bar.close()
    if not run.is_main:  # rank 0 evaluates and saves; the others are done
        run.end()
        return {"rank": run.rank, "steps": step}
    if history[-1]["step"] != step:  # the last step's verifier failed: evaluate what we have
        history.append({"step": step, "eval": evaluate(policy, held_out, eval_indices, args.seed)})
    seconds = time.perf_counter() - started
    final = policy.merge_and_unload() if args.lora_r else policy
    save_world_model(final, str(out))
    card = {"what": f"GRPO post-training of {started_from} on {args.env_id}",
            "command": command_line("python -m trainers.grpo", args),
            "args": dataclasses.asdict(args), "started_from": started_from, "steps": step,
            "train_seconds_this_run": round(seconds, 1), "reward_failures": failures, "held_out_transitions": len(eval_indices),
            "processes": run.world, "machine": machine_line(run), "clock": clock.record(),
            "start": history[0]["eval"], "final": history[-1]["eval"], "eval_history": history}
    (out / "card.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(out / "checkpoint", ignore_errors=True)
    if writer is not None:
        writer.close()
    run.end()
    return card
