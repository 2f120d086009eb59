"""A web agent that plans with a world model: propose k actions, predict each one's page changes, score, act.

Why: RLVR-World's downstream web result is an agent, not an F1: a policy proposes candidate
actions, the world model predicts what each would change on the page, a value function
scores the predicted page against the goal, and the agent takes the best. Here that loop
runs on MiniWeb's goal tasks (`rlvr_envs.web.goals`), and every part is a plain callable,
so an LLM proposer, another world model, a learned value or real WebArena can take its place:

* proposer `(observation, k, rng) -> list[str]`: k distinct candidate action strings (fewer
  when its draws keep repeating: with no noise ours proposes the expert's action alone);
  ours, `ScriptedProposer`, samples a noisy scripted expert;
* world model `(page, action, goal, url, previous_actions) -> ChangeList | None`: the
  predicted `New/Deleted/Updated items` of the next page, or None when its answer does
  not parse; ours: `OracleWorldModel` (the true simulator) and `LanguageWorldModel` (a
  causal LM prompted exactly as `RLVRWorld/MiniWeb-v0` prompts it). A world model may also
  have `predict_many(page, actions, goal, url, previous_actions)` to predict all candidates
  in one batch, and `predict_requests` to predict many episodes' candidates at once
  (`run_episodes`);
* value `(prediction, goal, page) -> float`: how far the predicted change advances the
  goal; ours, `rule_value`, is rule-based (rules in its docstring).

`ModelPredictiveAgent` takes the candidate with the highest value, ties broken by the
proposer's order; a candidate whose prediction is None scores `UNKNOWN_VALUE` (0.0, the
value of a prediction that changes nothing relevant: an unparsable answer tells nothing,
so it neither wins over progress nor loses to a predicted mistake). Without a world model
the agent is the policy alone: the proposer's first candidate.
"""

from __future__ import annotations

import copy
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr_envs.core.types import Transition
from rlvr_envs.web.acctree import Item, Tree, TreeParseError, extract_changes, parse_item, parse_tree
from rlvr_envs.web.changes import ChangeList, parse_changes
from rlvr_envs.web.goals import Goal, expert_action, random_action
from rlvr_envs.web.mini_web import ActionError
from rlvr_envs.web.task import MiniWebTaskConfig, web_prompt
from rlvr_envs.web.wma import format_previous_actions

Proposer = Callable[[dict[str, str], int, random.Random], list[str]]
WorldModel = Callable[[str, str, str, str, Sequence[str]], "ChangeList | None"]
Value = Callable[[ChangeList, "Goal | str", str], float]

#: the value of a candidate whose predicted changes did not parse
UNKNOWN_VALUE = 0.0


def _bound_env(env: Any, observation: dict[str, str] | None = None):
    """The goal env under wrappers; with `observation`, checks it is that env's current page
    (the privileged parts read the true state, so they must see the page the agent sees)."""
    env = getattr(env, "unwrapped", env)
    if getattr(env, "browser", None) is None:
        raise ValueError("the goal env has no episode: call env.reset() first")
    if observation is not None and observation.get("page") != env.browser.text():
        raise ValueError("the observation is not the bound env's current page (step the env the agent is bound to)")
    return env


class ScriptedProposer:
    """A noisy scripted expert as the policy that proposes actions.

    The policy draws the expert's action (`goals.expert_action`) with probability
    1 - `noise` and a random affordance (`goals.random_action`) otherwise; a proposal is k
    distinct draws in the order drawn (fewer when `max_draws` draws repeat), so the
    expert's action is first only when the first draw was the expert's, and the first
    candidate alone is the noisy policy. Reads the true page and goal of `env` (a
    `MiniWebGoalEnv`, wrapped or not), so it is bound to that env's current episode.
    """

    def __init__(self, env: Any, noise: float = 0.5, max_draws: int = 64):
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise}")
        self.env, self.noise, self.max_draws = env, float(noise), int(max_draws)

    def __call__(self, observation: dict[str, str], k: int, rng: random.Random) -> list[str]:
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        env = _bound_env(self.env, observation)
        expert = expert_action(env.browser, env.goal)
        candidates: list[str] = []
        for _ in range(max(self.max_draws, 4 * k)):
            action = random_action(env.browser, rng) if rng.random() < self.noise else expert
            if action not in candidates:
                candidates.append(action)
                if len(candidates) == k:
                    break
        return candidates


class OracleWorldModel:
    """The true simulator as a world model: applies the action to a deep copy of the env's
    browser (its random state included, so navigation builds the very page the env will)
    and returns the extracted changes; an action the page rejects changes nothing."""

    def __init__(self, env: Any):
        self.env = env

    def __call__(self, page: str, action: str, goal: str, url: str, previous_actions: Sequence[str]) -> ChangeList:
        browser = _bound_env(self.env, {"page": page}).browser
        clone = copy.deepcopy(browser)
        try:
            clone.apply(action)
        except ActionError:
            return ChangeList.from_sections({})
        return ChangeList.from_changes(extract_changes(page, clone.text()))


class LanguageWorldModel:
    """A causal LM world model, prompted exactly as `RLVRWorld/MiniWeb-v0` prompts it.

    The prompt is `task.web_prompt` of the MiniWeb task's template (`prompt`, default the
    task's "compact"), with the goal text as the objective and the previous actions as
    MiniWeb-v0 records them (`['None', a1, a2]`, the last `history` actions, 2 as in the
    task's default generator), tokenized without special tokens as `TextTask` does. All
    candidates of a step (of every running episode, under `run_episodes`) are generated
    greedily in left-padded batches of up to `batch_size` prompts; an answer that
    `changes.parse_changes` cannot read (or a prompt too long for the model) predicts None.

    `model`: a directory of a Hugging Face causal LM (e.g. `runs/sft_miniweb/final`) or a
    loaded model; `tokenizer`: name/path/object (default: the model directory's own, else
    the embedded MiniWeb tokenizer, the task's default).
    """

    def __init__(self, model: Any, tokenizer: Any = None, prompt: str | None = None, history: int | None = None,
                 max_new_tokens: int = 512, device: str | None = None, batch_size: int = 64):
        from pathlib import Path

        from rlvr_envs.core.tokenizers import load_tokenizer
        from rlvr_envs.web.task import prompt_template

        defaults = MiniWebTaskConfig()
        self.prompt_style = defaults.prompt if prompt is None else prompt
        prompt_template(self.prompt_style)  # fails early, naming the choices
        self.history = defaults.history if history is None else int(history)
        if self.history < 0 or max_new_tokens < 1 or batch_size < 1:
            raise ValueError(f"history must be >= 0, max_new_tokens and batch_size >= 1, got {self.history}, "
                             f"{max_new_tokens}, {batch_size}")
        self.max_new_tokens, self.batch_size = int(max_new_tokens), int(batch_size)
        if isinstance(model, (str, Path)):
            path = Path(model).expanduser()
            if not (path / "config.json").is_file():
                raise FileNotFoundError(f"no Hugging Face model at {path} (config.json missing): pass the directory a "
                                        f"trainer saved, e.g. runs/<run>/final")
            if tokenizer is None and (path / "tokenizer.json").is_file():
                tokenizer = str(path)
            from rlvr_envs.core.extras import needs_extra

            with needs_extra("the MiniWeb world-model agent", extra="web-agent"):
                import torch  # noqa: F401  (transformers models need it)
                from transformers import AutoModelForCausalLM

            from rlvr_envs.core.files import check_model_dir

            check_model_dir(path, "the web world model", "copy it again, or retrain it (`python -m trainers.sft`)")
            model = AutoModelForCausalLM.from_pretrained(str(path))
            self.name = str(path)
        else:
            self.name = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
        self.tokenizer = load_tokenizer(defaults.tokenizer if tokenizer is None else tokenizer)
        if self.tokenizer.eos_token_id is None:
            raise ValueError("the world model's tokenizer has no EOS token")
        vocab = getattr(model.config, "vocab_size", None)
        if isinstance(vocab, int) and vocab < len(self.tokenizer):
            raise ValueError(f"the model {self.name} has {vocab} token embeddings but its tokenizer has "
                             f"{len(self.tokenizer)} tokens: pass the tokenizer it was trained with")
        self.model = model.to(device) if device else model
        self.model.eval()
        self.eos = int(self.tokenizer.eos_token_id)
        pad = self.tokenizer.pad_token_id
        self.pad = int(pad) if pad is not None else self.eos
        #: the raw responses of the last call (for inspection)
        self.last_responses: list[str] = []

    def prompt(self, page: str, action: str, goal: str, url: str, previous_actions: Sequence[str]) -> str:
        """q(s, a) as `RLVRWorld/MiniWeb-v0` writes it."""
        recent = list(previous_actions)[-self.history:] if self.history else []
        transition = Transition(uid="agent", state=page, action=action, next_state=None, meta={
            "url": url, "objective": goal, "previous_action": format_previous_actions(["None", *recent])})
        return web_prompt(transition, self.prompt_style)

    def __call__(self, page: str, action: str, goal: str, url: str,
                 previous_actions: Sequence[str]) -> ChangeList | None:
        return self.predict_many(page, [action], goal, url, previous_actions)[0]

    def predict_many(self, page: str, actions: Sequence[str], goal: str, url: str,
                     previous_actions: Sequence[str]) -> list[ChangeList | None]:
        return self.predict_requests([(page, action, goal, url, previous_actions) for action in actions])

    def predict_requests(self, requests: Sequence[tuple[str, str, str, str, Sequence[str]]]) -> list[ChangeList | None]:
        """One prediction per `(page, action, goal, url, previous_actions)`, decoded greedily in left-padded
        batches of at most `batch_size` prompts of similar length (many episodes' candidates at once)."""
        prompts = [self.tokenizer(self.prompt(*request), add_special_tokens=False)["input_ids"] for request in requests]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        responses = [""] * len(prompts)  # a prompt that alone fills the model's context predicts nothing
        fits = [i for i, p in enumerate(prompts) if not isinstance(limit, int) or len(p) < limit]
        fits.sort(key=lambda i: len(prompts[i]))
        fitting = set(fits)
        for at in range(0, len(fits), self.batch_size):
            chunk = fits[at:at + self.batch_size]
            for i, text in zip(chunk, self._generate([prompts[i] for i in chunk], limit)):
                responses[i] = text
        self.last_responses = responses
        return [_parse(text) if i in fitting else None for i, text in enumerate(responses)]

    def _generate(self, prompts: list[list[int]], limit: int | None) -> list[str]:
        import torch

        width = max(len(p) for p in prompts)
        new_tokens = self.max_new_tokens if not isinstance(limit, int) else min(self.max_new_tokens, limit - width)
        ids = torch.full((len(prompts), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt):] = torch.as_tensor(prompt)
            mask[row, width - len(prompt):] = 1
        device = next(self.model.parameters()).device
        with torch.no_grad():
            out = self.model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=False,
                                      max_new_tokens=new_tokens, eos_token_id=self.eos, pad_token_id=self.pad,
                                      use_cache=True)
        responses = []
        for row in out[:, width:].tolist():
            row = row[: row.index(self.eos)] if self.eos in row else row
            responses.append(self.tokenizer.decode(row, skip_special_tokens=True))
        return responses


def _parse(text: str) -> ChangeList | None:
    try:
        return parse_changes(text)
    except Exception:  # model output must never crash the agent: unparsable is "unknown"
        return None


# -- the value function ------------------------------------------------------------------------------

SUCCESS, MISTAKE = 1.0, -1.0
#: a step toward the goal (the target comes into view, a field gets its value, a box its state)
PROGRESS = 0.3
#: the search results for the goal's word appear
SEARCHED = 0.6
#: going onto (+) or off (-) the goal's page, closing (+) or opening (-) a dialog
DETOUR = 0.2
_CART = re.compile(r"You added (.+) to your shopping cart\.")
_RESULTS = "Search results for: '{}'"
_NOT_VALUES = ("This is a required field.", "You deleted the record.")


def _items(lines: Sequence[str]) -> list[Item]:
    found = []
    for line in lines:
        try:
            found.append(parse_item(line))
        except TreeParseError:  # `None` and prose lines are not items
            continue
    return found


@dataclass
class _Page:
    """The current tree with each item's parent and whether it lies in a dialog."""

    tree: Tree

    def __post_init__(self):
        self.parent: dict[str, Item] = {}
        self.in_dialog: set[str] = set()
        stack: list[Item] = []
        for item in self.tree.items:
            del stack[item.depth:]
            if stack:
                self.parent[item.id] = stack[-1]
                if stack[-1].role == "dialog" or stack[-1].id in self.in_dialog:
                    self.in_dialog.add(item.id)
            stack.append(item)
        self.ids = {item.id: item for item in self.tree.items}
        self.title = next((i.name for i in self.tree.items if i.role == "RootWebArea"), "") or ""
        self.dialog = any(i.role == "dialog" for i in self.tree.items)

    def children(self, item: Item) -> list[Item]:
        return [i for i in self.tree.items if self.parent.get(i.id) is item]

    def form_state(self) -> dict[str, str]:
        """Field name -> typed text ('' when empty), checkbox name -> 'true'/'false', outside dialogs."""
        state: dict[str, str] = {}
        for item in self.tree.items:
            if item.id in self.in_dialog:
                continue
            if item.role == "textbox":
                value = next((c.name for c in self.children(item) if c.role == "StaticText"), "")
                state.setdefault(item.name, value or "")
            elif item.role == "checkbox":
                state.setdefault(item.name, dict(item.attrs).get("checked", "false"))
        return state


def _after_form_state(page: _Page, new: list[Item], updated: list[Item]) -> dict[str, str]:
    """The form state the prediction implies: a predicted StaticText under a known textbox
    is its new value; a new StaticText goes to the textbox the prediction newly focuses."""
    state = page.form_state()
    focused = next((i for i in updated if i.role == "textbox" and ("focused", "True") in i.attrs
                    and i.id not in page.in_dialog), None)
    for item in [*new, *updated]:
        if item.role == "checkbox" and item.id not in page.in_dialog:
            state[item.name] = dict(item.attrs).get("checked", "false")
        if item.role != "StaticText" or item.name in _NOT_VALUES:
            continue
        parent = page.parent.get(item.id)
        if parent is not None and item.id in page.ids:
            if parent.role == "textbox" and parent.id not in page.in_dialog:
                state[parent.name] = item.name
        elif focused is not None and item in new:
            state[focused.name] = item.name
    return state


def _form_score(goal: Goal, state: dict[str, str]) -> int:
    return (sum(state.get(name) == value for name, value in goal.fields)
            + sum(state.get(name) == ("true" if want else "false") for name, want in goal.checks))


def rule_value(prediction: ChangeList, goal: Goal | str, page: str) -> float:
    """How far the predicted changes of one action advance `goal` on the current `page`.

    Decisive outcomes return at once: 1.0 (`SUCCESS`) when the prediction shows the goal
    done, -1.0 (`MISTAKE`) when it shows an effect the goal forbids:
    * cart goals: a cart message "You added X ..." (X the named product, or for a search
      goal a product holding the word while the page shows its search results) or a
      message naming another product;
    * upvote: the target's button turning into "Retract upvote" (an upvote of another
      post, or retracting the target's, is a mistake; retracting a stray vote is +0.3);
    * delete: "You deleted the record." with the target's name cell deleted (another
      name deleted is a mistake);
    * forms: a "Thank you" page, when the current page is the goal's form, no dialog is
      open and every field and checkbox holds the goal's value (else a mistake).
    Otherwise the sum of progress terms: +0.3 (`PROGRESS`) when the target row comes into
    view, +0.3 per goal field or checkbox that the action sets right (-0.3 per one it
    breaks), +0.3 for typing the search word, +0.6 (`SEARCHED`) when the search results
    for the word appear, +/-0.2 (`DETOUR`) for going back onto / leaving the goal's form
    page and for closing / opening a dialog. A prediction that changes nothing relevant
    is worth 0 (as is an unparsable one: `UNKNOWN_VALUE`).
    """
    goal = goal if isinstance(goal, Goal) else Goal.parse(goal)
    current = _Page(parse_tree(page))
    new, deleted, updated = (_items(prediction.section(s)) for s in ("new", "deleted", "updated"))
    shown = [*new, *updated]
    root = next((i for i in shown if i.role == "RootWebArea"), None)
    score = DETOUR * (any(i.role == "dialog" for i in deleted) - any(i.role == "dialog" for i in new))
    kind, target = goal.kind, goal.target
    if kind in ("cart_product", "search_cart"):
        added = next((m.group(1) for i in shown if i.role == "StaticText" for m in [_CART.fullmatch(i.name or "")]
                      if m), None)
        if kind == "cart_product":
            if added is not None:
                return SUCCESS if added == target else MISTAKE
            return score + PROGRESS * any(i.role == "link" and i.name == target for i in new)
        results = _RESULTS.format(target)
        if added is not None:
            return SUCCESS if target.lower() in added.lower() and current.title == results else MISTAKE
        if root is not None and root.name == results:
            return score + SEARCHED
        typed = _after_form_state(current, new, updated).get("Search")
        return score + PROGRESS * (typed == target != current.form_state().get("Search"))
    if kind == "upvote":
        votes = {"Upvote": False, "Retract upvote": True}
        for button in updated:
            if button.role == "button" and button.name in votes:
                parent = current.parent.get(button.id)
                title = next((c.name for c in current.children(parent) if c.role in ("link", "heading")), None) \
                    if parent is not None else None
                if title == target:
                    return SUCCESS if votes[button.name] else MISTAKE
                return MISTAKE if votes[button.name] else score + PROGRESS
        return score + PROGRESS * any(i.role == "link" and i.name == target for i in new)
    if kind == "delete":
        if any(i.role == "StaticText" and i.name == "You deleted the record." for i in shown):
            names = {i.name for i in deleted if i.role == "gridcell" and "@" not in (i.name or "")}
            if names:
                return SUCCESS if names == {target} else MISTAKE
        return score + PROGRESS * any(i.role == "gridcell" and i.name == target for i in new)
    # forms
    if any(i.role == "heading" and i.name == "Thank you" for i in new):
        right = current.title == goal.form and not current.dialog
        full = _form_score(goal, current.form_state()) == len(goal.fields) + len(goal.checks)
        return SUCCESS if right and full else MISTAKE
    if root is not None and root.name != current.title:
        return score + DETOUR * ((root.name == goal.form) - (current.title == goal.form))
    before = _form_score(goal, current.form_state())
    after = _form_score(goal, _after_form_state(current, new, updated))
    return score + PROGRESS * (after - before)


# -- the agent ---------------------------------------------------------------------------------------

class ModelPredictiveAgent:
    """Propose k candidates, predict each one's page changes, score them, act on the best.

    `world_model=None` is the policy alone (the proposer's first candidate). `act` reads
    the observation of `RLVRWorld/MiniWeb-Goal-v0` (`goal`, `url`, `page`); the agent keeps
    its own previous actions for the world model's prompt (`reset` clears them and seeds
    the proposer's random generator). `stats` counts predictions and unparsable ones;
    `last` holds the last step's candidates, predictions and values.
    """

    def __init__(self, proposer: Proposer, world_model: WorldModel | None = None, value: Value = rule_value,
                 k: int = 4, unknown_value: float = UNKNOWN_VALUE, seed: int = 0):
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        self.proposer, self.world_model, self.value, self.k = proposer, world_model, value, int(k)
        self.unknown_value = float(unknown_value)
        self.stats = {"steps": 0, "predictions": 0, "unparsable": 0}
        self.last: dict[str, Any] = {}
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.previous_actions: list[str] = []

    def propose(self, observation: dict[str, str]) -> list[str]:
        """This step's candidate actions (the proposer's; the policy alone acts on the first)."""
        candidates = list(self.proposer(observation, self.k, self.rng))
        if not candidates:
            raise ValueError("the proposer returned no candidate action")
        self.stats["steps"] += 1
        return candidates

    def predict(self, observation: dict[str, str], candidates: Sequence[str]) -> list[ChangeList | None]:
        """The world model's prediction for each candidate (in one batch where it has `predict_many`; none
        without a world model)."""
        if self.world_model is None:
            return []
        args = (observation["page"], candidates, observation["goal"], observation["url"], self.previous_actions)
        batch = getattr(self.world_model, "predict_many", None)
        if batch is not None:
            return list(batch(*args))
        return [self.world_model(args[0], c, *args[2:]) for c in candidates]

    def requests(self, observation: dict[str, str], candidates: Sequence[str]) -> list[tuple]:
        """What `predict` asks of the world model, as `LanguageWorldModel.predict_requests` rows."""
        return [(observation["page"], c, observation["goal"], observation["url"], tuple(self.previous_actions))
                for c in candidates]

    def choose(self, observation: dict[str, str], candidates: Sequence[str],
               predictions: Sequence[ChangeList | None]) -> str:
        """The candidate with the highest value of its prediction (the first without a world model)."""
        if self.world_model is None:
            choice, predictions, values = 0, [], []
        else:
            if len(predictions) != len(candidates):
                raise ValueError(f"the world model returned {len(predictions)} predictions for {len(candidates)} "
                                 f"candidates")
            goal, page = observation["goal"], observation["page"]
            values = [self.unknown_value if p is None else float(self.value(p, goal, page)) for p in predictions]
            self.stats["predictions"] += len(predictions)
            self.stats["unparsable"] += sum(p is None for p in predictions)
            choice = max(range(len(candidates)), key=lambda i: (values[i], -i))
        self.last = {"candidates": list(candidates), "predictions": list(predictions), "values": values,
                     "choice": choice}
        action = candidates[choice]
        self.previous_actions.append(action)
        return action

    def act(self, observation: dict[str, str]) -> str:
        candidates = self.propose(observation)
        return self.choose(observation, candidates, self.predict(observation, candidates))


def run_episode(env: Any, agent: ModelPredictiveAgent, index: int, seed: int = 0) -> dict[str, Any]:
    """One goal episode of `agent` on `env` (episode `index`, agent seeded with `seed`): a row
    with the outcome, steps, rejected actions, predictions, unparsable ones and seconds."""
    return run_episodes([env], [agent], [index], [seed])[0]


def run_episodes(envs: Sequence[Any], agents: Sequence[ModelPredictiveAgent], indices: Sequence[int],
                 seeds: Sequence[int]) -> list[dict[str, Any]]:
    """Episodes in lockstep, episode i on `envs[i]` by `agents[i]`: one `run_episode` row each.

    Why: a language world model is fast when it decodes many prompts at once. When the agents
    share one world model with `predict_requests`, every step predicts the candidates of all
    running episodes in one call; otherwise each agent predicts its own. Each agent decides
    exactly as alone; a batched language model may differ from one batch per step only by
    floating-point rounding across batch shapes. A row's `seconds` is the batch's wall time over
    its episodes.
    """
    if not len(envs) == len(agents) == len(indices) == len(seeds):
        raise ValueError("run_episodes needs one env, agent, index and seed per episode")
    start = time.perf_counter()
    befores = [dict(agent.stats) for agent in agents]
    observations, rows = [], []
    for env, agent, index, seed in zip(envs, agents, indices, seeds):
        observation, info = env.reset(options={"index": int(index)})
        agent.reset(seed)
        observations.append(observation)
        rows.append({"index": int(index), "site": info["site"], "goal_kind": info["goal_kind"], "success": False,
                     "steps": 0, "invalid_actions": 0})
    shared = agents[0].world_model if agents else None
    batched = hasattr(shared, "predict_requests") and all(agent.world_model is shared for agent in agents)
    running = list(range(len(envs)))
    while running:
        candidates = {i: agents[i].propose(observations[i]) for i in running}
        if batched:
            flat = shared.predict_requests([r for i in running for r in agents[i].requests(observations[i],
                                                                                             candidates[i])])
            predictions, at = {}, 0
            for i in running:
                predictions[i], at = flat[at:at + len(candidates[i])], at + len(candidates[i])
        else:
            predictions = {i: agents[i].predict(observations[i], candidates[i]) for i in running}
        for i in list(running):
            action = agents[i].choose(observations[i], candidates[i], predictions[i])
            observations[i], _, terminated, truncated, info = envs[i].step(action)
            rows[i].update(success=bool(info["success"]), steps=info["steps"], invalid_actions=info["invalid_actions"])
            if terminated or truncated:
                running.remove(i)
    seconds = (time.perf_counter() - start) / max(1, len(envs))
    for row, agent, before in zip(rows, agents, befores):
        row.update(predictions=agent.stats["predictions"] - before["predictions"],
                   unparsable=agent.stats["unparsable"] - before["unparsable"], seconds=seconds)
    return rows
