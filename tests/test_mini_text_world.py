"""MiniTextWorld: the simulator's dynamics, its rows' schema, the task built on it, the tokenizer."""

from __future__ import annotations

import json
import random
import statistics

import pytest

from rlvr_envs.text_game import mini_text_world as sim
from rlvr_envs.text_game.mini_text_world import Action, World, container, device, item, thermal, water_container
from tests.samples import shared_data_or_skip

EASY = sim.DIFFICULTIES["easy"]


@pytest.fixture(scope="module")
def easy_rows():
    return sim.generate_rows(EASY, seed=1, count=512)


def objects_by_uuid(state):
    return {obj["uuid"]: obj for obj in state["objects"]}


def changed(row) -> bool:
    return (objects_by_uuid(row["current_state"]) != objects_by_uuid(row["tick_state"])
            or row["current_score_state"] != row["next_score_state"])


def step(world: World, game: str, action: Action) -> dict:
    return sim.step_row(world, sim.GAMES[game], action, observation="", last_action="")


def named(world: World, base: str):
    return next(thing for thing in world.things() if thing.base == base)


# -- generation is a pure function of (config, seed, index) ---------------------------------------

def test_same_arguments_give_the_same_row():
    for index in range(8):
        assert sim.generate_row(EASY, 3, index) == sim.generate_row(EASY, 3, index)
    hard = sim.DIFFICULTIES["hard"]
    assert json.dumps(sim.generate_row(hard, 3, 5)) == json.dumps(sim.generate_row(hard, 3, 5))


def test_different_seeds_and_indices_give_different_rows():
    first = [sim.generate_row(EASY, 0, index) for index in range(16)]
    second = [sim.generate_row(EASY, 1, index) for index in range(16)]
    assert sum(a != b for a, b in zip(first, second)) >= 14
    assert len({json.dumps(row["current_state"]["objects"]) for row in first}) >= 14


def test_rows_use_the_shared_index_rng_and_any_order(monkeypatch):
    from rlvr_envs.core import util
    from rlvr_envs.text_game.mini_text_world import generator

    calls = []

    def spy(seed, index):
        calls.append((seed, index))
        return util.index_rng(seed, index)

    monkeypatch.setattr(generator, "index_rng", spy)
    row = sim.generate_row(EASY, 5, 7)
    assert calls == [(5, 7)]
    assert sim.generate_rows(EASY, 5, 3, start=6)[1] == row  # alone or in a slice: the same row
    assert [sim.generate_row(EASY, 5, i) for i in (9, 8, 7)][2] == row


def test_package_layout_keeps_the_public_api():
    from rlvr_envs.text_game.mini_text_world.games import boil_pot, chill_groceries, freeze_tray, keep_campfire

    modules = (boil_pot, chill_groceries, freeze_tray, keep_campfire)
    assert [module.GAME for module in modules] == list(sim.GAMES.values())
    for name in ("generate_rows", "generate_row", "DIFFICULTIES", "all_rules", "game_rules", "MiniTextWorldConfig",
                 "GAMES", "World", "Action", "act", "tick", "step_row", "build_world", "choose_action", "run_tick"):
        assert name in sim.__all__ and hasattr(sim, name), name


def test_config_changes_the_world():
    plain = sim.generate_row(EASY, 0, 0)
    busy = sim.generate_row(sim.MiniTextWorldConfig(distractors=3, extra_properties=2), 0, 0)
    assert len(busy["current_state"]["objects"]) == len(plain["current_state"]["objects"]) + 3
    assert sim.generate_row(sim.MiniTextWorldConfig(games=("keep-campfire",)), 0, 0)["game"] == "keep-campfire"


@pytest.mark.parametrize("bad", [
    {"games": ("no-such-game",)}, {"games": ()}, {"distractors": -1}, {"distractors": 99},
    {"extra_properties": 9}, {"max_steps": 0}, {"plan_rate": 1.5}, {"rollout_plan_rate": -0.1},
])
def test_bad_config_is_refused(bad):
    with pytest.raises(ValueError):
        sim.MiniTextWorldConfig(**bad).validate()


# -- rows look exactly like ByteSized32's -------------------------------------------------------

def shape(value, depth=0):
    """Key names and value types of a row, states, scores and objects (property names vary by type)."""
    if isinstance(value, dict):
        return {key: shape(val, depth + 1) if key != "properties" else "dict" for key, val in value.items()}
    if isinstance(value, list):
        return [shape(value[0], depth + 1)] if value and isinstance(value[0], dict) else "list"
    return type(value).__name__


def test_rows_have_the_bytesized32_schema(easy_rows):
    real_rows = [json.loads(line) for line in
                 shared_data_or_skip("bytesized32", "test_sample.jsonl").read_text().splitlines() if line.strip()]
    real_shape = shape(real_rows[0])
    assert all(shape(row) == real_shape for row in real_rows)
    for row in easy_rows[:64] + [sim.generate_row(sim.DIFFICULTIES["hard"], 1, i) for i in range(16)]:
        assert shape(row) == real_shape
        assert list(row) == list(real_rows[0])  # same key order too
        for state in ("current_state", "action_state", "tick_state"):
            for obj in row[state]["objects"]:
                assert obj["name"] == f"{obj['name'].rsplit(' (ID: ', 1)[0]} (ID: {obj['uuid']})"
                assert all(isinstance(v, (bool, int, str)) for v in obj["properties"].values())
            names = {obj["name"] for obj in row[state]["objects"]}
            assert all(child in names for obj in row[state]["objects"] for child in obj["contains"])


def test_rows_pass_the_bytesized32_loader_checks(easy_rows):
    from rlvr_envs.text_game.bytesized32 import _check_row

    for row in easy_rows[:32]:
        _check_row(row, "generated")


def test_rules_follow_the_rule_kinds():
    for game in sim.GAMES:
        rules = sim.game_rules(game)
        assert set(rules) == {"object", "action", "score"} and all(text.strip() for text in rules.values())
    assert "light X with M" in sim.game_rules("keep-campfire")["action"]
    with pytest.raises(KeyError, match="unknown MiniTextWorld game"):
        sim.game_rules("boil-water")


# -- dynamics --------------------------------------------------------------------------------------

def kitchen() -> World:
    world = World("kitchen")
    world.add("stove", "Stove", {**container(False, prefix="on"), **device(False), **thermal(250, 30)})
    world.add("sink", "Sink", {**container(False), **device(False)})
    world.add("pot", "Pot", {**container(True), **water_container(), "temperature": 20, "isScorched": False})
    world.add("freezer", "Freezer", {**container(False, openable=True, is_open=False), **device(True),
                                     **thermal(-10, 10)})
    return world


def test_turning_on_a_device_changes_is_on_in_the_action_state():
    world = kitchen()
    row = step(world, "boil-pot", Action("turn on", (named(world, "stove"),)))
    stove = lambda state: next(o for o in state["objects"] if o["type"] == "Stove")  # noqa: E731
    assert stove(row["current_state"])["properties"]["isOn"] is False
    assert stove(row["action_state"])["properties"]["isOn"] is True
    assert stove(row["tick_state"])["properties"]["isOn"] is True
    assert row["tick_state"]["lastAction"] == "turn on stove (ID: 2)"


def test_sink_creates_water_with_the_next_free_uuid():
    world = kitchen()
    sink, pot = named(world, "sink"), named(world, "pot")
    step(world, "boil-pot", Action("take", (pot,)))
    step(world, "boil-pot", Action("put", (pot, sink)))
    row = step(world, "boil-pot", Action("turn on", (sink,)))
    base = row["current_state"]["max_UUID"]
    created = set(objects_by_uuid(row["tick_state"])) - set(objects_by_uuid(row["current_state"]))
    assert created == {base}
    water = objects_by_uuid(row["tick_state"])[base]
    assert water["type"] == "Water" and water["name"] == f"water (ID: {base})"
    assert water["properties"]["temperature"] == 20
    assert row["tick_state"]["max_UUID"] == base + 1
    assert row["action_state"]["max_UUID"] == base  # created by the tick, not by the action
    assert water["name"] in objects_by_uuid(row["tick_state"])[pot.uuid]["contains"]
    assert row["next_score_state"]["score"] == 1  # the pot holds water


def test_water_boils_into_steam_on_the_stove_and_wins():
    world = kitchen()
    stove, sink, pot = named(world, "stove"), named(world, "sink"), named(world, "pot")
    for action in [Action("take", (pot,)), Action("put", (pot, sink)), Action("turn on", (sink,)),
                   Action("turn off", (sink,)), Action("take", (pot,)), Action("put", (pot, stove))]:
        step(world, "boil-pot", action)
    (water,) = pot.holds("Water")
    step(world, "boil-pot", Action("turn on", (stove,)))
    assert water.properties["temperature"] == 50  # the stove heats 30 per tick toward 250
    row = step(world, "boil-pot", Action("look"))
    assert water.properties["temperature"] == 80 and row["next_score_state"]["score"] == 2
    row = step(world, "boil-pot", Action("look"))  # 110: boils
    before, after = objects_by_uuid(row["current_state"]), objects_by_uuid(row["tick_state"])
    assert water.uuid in before and water.uuid not in after, "the boiled water object is removed"
    (steam,) = [o for o in after.values() if o["type"] == "Steam"]
    assert steam["uuid"] == row["current_state"]["max_UUID"] and steam["properties"]["temperature"] == 110
    assert steam["name"] in after[pot.uuid]["contains"]
    assert row["next_score_state"] == {"score": 3, "gameOver": True, "gameWon": True}
    assert "boils into steam" in row["tick_state"]["observation"]


def test_empty_pot_scorches_on_the_stove_and_loses():
    world = kitchen()
    stove, pot = named(world, "stove"), named(world, "pot")
    step(world, "boil-pot", Action("take", (pot,)))
    step(world, "boil-pot", Action("put", (pot, stove)))
    row = step(world, "boil-pot", Action("turn on", (stove,)))
    while not row["next_score_state"]["gameOver"]:
        row = step(world, "boil-pot", Action("inventory"))
    assert pot.properties["isScorched"] and pot.properties["temperature"] >= sim.SCORCH_TEMPERATURE
    assert row["next_score_state"] == {"score": 0, "gameOver": True, "gameWon": False}


def test_objects_cool_back_toward_room_temperature():
    world = kitchen()
    pot = named(world, "pot")
    pot.properties["temperature"] = 80
    step(world, "boil-pot", Action("look"))
    assert pot.properties["temperature"] == 80 - sim.ROOM_DRIFT


def test_water_freezes_only_in_a_closed_running_freezer_and_ice_melts_outside():
    world = kitchen()
    freezer, pot = named(world, "freezer"), named(world, "pot")
    water = world.add("water", "Water", {**item(False), "temperature": 20}, pot)
    step(world, "boil-pot", Action("open", (freezer,)))
    step(world, "boil-pot", Action("take", (pot,)))
    step(world, "boil-pot", Action("put", (pot, freezer)))
    assert water.properties["temperature"] == 20, "an open freezer does not cool"
    step(world, "boil-pot", Action("close", (freezer,)))  # 20 -> 10
    row = step(world, "boil-pot", Action("look"))  # 10 -> 0: freezes
    (ice,) = pot.holds("Ice")
    assert water.parent is None and ice.uuid == row["current_state"]["max_UUID"]
    row = step(world, "boil-pot", Action("open", (freezer,)))  # an open door stops the cooling: 0 -> 5
    (water,) = pot.holds("Water")
    assert ice.parent is None and water.uuid == row["current_state"]["max_UUID"]
    assert water.properties["temperature"] == 5 and "melts into water" in row["tick_state"]["observation"]


def test_refused_actions_change_nothing():
    world = kitchen()
    stove, freezer, pot = named(world, "stove"), named(world, "freezer"), named(world, "pot")
    hidden = world.add("peas", "Food", {**item(True), "temperature": -10, "isFrozen": True}, freezer)
    for action, message in [
        (Action("take", (stove,)), "not moveable"),
        (Action("open", (pot,)), "can't be opened"),
        (Action("turn on", (pot,)), "can't be turned on or off"),
        (Action("put", (pot, stove)), "don't have"),
        (Action("take", (hidden,)), "inside the closed"),
        (Action("close", (freezer,)), "already closed"),
    ]:
        row = step(world, "boil-pot", action)
        assert message in row["action_state"]["observation"]
        assert row["action_state"]["objects"] == row["current_state"]["objects"], action.text


def test_campfire_burns_logs_to_ash_and_going_out_loses():
    world = World("campsite")
    pit = world.add("fire pit", "FirePit", {**container(False), "isBurning": False, "burnTime": 0, "burnGoal": 5})
    log = world.add("log", "Log", {**item(True), "fuel": 2})
    match = world.add("match", "Match", item(True))
    step(world, "keep-campfire", Action("take", (log,)))
    step(world, "keep-campfire", Action("put", (log, pit)))
    step(world, "keep-campfire", Action("take", (match,)))
    row = step(world, "keep-campfire", Action("light", (pit, match)))
    assert match.uuid not in objects_by_uuid(row["action_state"]), "a struck match is used up"
    assert row["next_score_state"]["score"] == 1 and log.properties["fuel"] == 1
    row = step(world, "keep-campfire", Action("look"))
    after = objects_by_uuid(row["tick_state"])
    assert log.uuid not in after
    (ash,) = [o for o in after.values() if o["type"] == "Ash"]
    assert ash["uuid"] == row["current_state"]["max_UUID"] and ash["name"] in after[pit.uuid]["contains"]
    assert after[pit.uuid]["properties"]["isBurning"] is False
    assert row["next_score_state"] == {"score": 2, "gameOver": True, "gameWon": False}


def test_food_in_the_freezer_is_ruined_and_in_the_fridge_wins():
    world = World("kitchen")
    fridge = world.add("fridge", "Fridge", {**container(False, openable=True, is_open=True), **device(True),
                                            **thermal(4, 4)})
    milk = world.add("milk", "Food", {**item(True), "temperature": 20, "isFrozen": False})
    step(world, "chill-groceries", Action("take", (milk,)))
    step(world, "chill-groceries", Action("put", (milk, fridge)))
    row = step(world, "chill-groceries", Action("close", (fridge,)))
    while not row["next_score_state"]["gameOver"]:
        row = step(world, "chill-groceries", Action("look"))
    assert milk.properties["temperature"] == 4
    assert row["next_score_state"] == {"score": 1, "gameOver": True, "gameWon": True}

    world = kitchen()
    freezer = named(world, "freezer")
    fish = world.add("fish", "Food", {**item(True), "temperature": 20, "isFrozen": False})
    for action in [Action("open", (freezer,)), Action("take", (fish,)), Action("put", (fish, freezer)),
                   Action("close", (freezer,)), Action("look")]:
        row = step(world, "chill-groceries", action)
    assert fish.properties["isFrozen"] and row["next_score_state"]["gameOver"]
    assert not row["next_score_state"]["gameWon"]


def test_every_game_is_winnable_by_its_plan():
    for name, game in sim.GAMES.items():
        for seed in range(5):
            rng = random.Random(seed)
            world = sim.build_world(game, sim.MiniTextWorldConfig(distractors=2, extra_properties=1), rng)
            for _ in range(30):
                outcome = game.score(world)
                if outcome.won or outcome.lost:
                    break
                sim.run_tick(world, sim.act(world, sim.choose_action(world, game, rng, plan_rate=1.0)))
            assert game.score(world).won, f"{name} seed {seed}"


# -- the generated data as a whole ------------------------------------------------------------

def test_changed_fraction_and_events_are_like_bytesized32(easy_rows):
    fraction = sum(map(changed, easy_rows)) / len(easy_rows)
    assert 0.3 <= fraction <= 0.55, fraction  # measured 0.414 here; ByteSized32's test set: 41 %
    assert {row["game"] for row in easy_rows} == set(sim.GAMES)
    outcomes = {(row["next_score_state"]["gameOver"], row["next_score_state"]["gameWon"]) for row in easy_rows}
    assert {(True, True), (True, False), (False, False)} <= outcomes
    created = sum(bool(set(objects_by_uuid(r["tick_state"])) - set(objects_by_uuid(r["current_state"])))
                  for r in easy_rows)
    removed = sum(bool(set(objects_by_uuid(r["current_state"])) - set(objects_by_uuid(r["tick_state"])))
                  for r in easy_rows)
    assert created >= 10 and removed >= 10
    idle = [r for r in easy_rows if r["tick_state"]["lastAction"].split()[0] in ("look", "inventory", "examine")]
    assert idle and any(map(changed, idle)) and not all(map(changed, idle))  # the world ticks on


# -- the task and the tokenizer --------------------------------------------------------------

@pytest.fixture(scope="module")
def tasks():
    from rlvr_envs.core.factory import build_task

    return {reward: build_task("rlvr_envs.text_game.task:MiniTextWorldTask", reward=reward)
            for reward in ("binary", "task")}


def test_every_gold_answer_scores_the_maximum_on_both_rewards(tasks):
    for reward, task in tasks.items():
        indices = list(range(len(task)))
        results = task.verify(indices, [task.target_ids(i) for i in indices])
        assert all(r.parsed and r.reward == pytest.approx(task.max_reward(i)) for i, r in zip(indices, results)), reward
    binary = tasks["binary"]
    assert {binary.transition(i).changed for i in range(len(binary))} == {True, False}


def test_harder_difficulties_build_and_gold_is_max():
    from rlvr_envs.core.factory import build_task

    for difficulty in ("medium", "hard"):
        task = build_task("rlvr_envs.text_game.task:MiniTextWorldTask", difficulty=difficulty,
                          size=48, reward="task")
        rewards = [r.reward for r in task.verify(range(len(task)), [task.target_ids(i) for i in range(len(task))])]
        assert rewards == pytest.approx([task.max_reward(i) for i in range(len(task))])


def test_easy_prompts_are_short_with_the_embedded_tokenizer(tasks):
    task = tasks["binary"]
    prompts = [len(task.prompt_ids(i)) for i in range(len(task))]
    answers = [len(task.target_ids(i)) for i in range(len(task))]
    # measured on the 512 test transitions: prompts 448.5 mean / 541 max, answers 37.0 / 133
    assert statistics.mean(prompts) <= 480 and max(prompts) <= 600
    assert statistics.mean(answers) <= 60 and max(answers) <= 200
    assert task.vocab_size == 1024 and task.n_filtered == 0


def test_embedded_tokenizer_round_trips_gold_answers_exactly(tasks):
    from rlvr_envs.core.tokenizers import load_tokenizer

    tokenizer = load_tokenizer(None)
    assert len(tokenizer) == 1024
    assert tokenizer.eos_token_id is not None and tokenizer.pad_token_id is not None
    assert tokenizer.eos_token_id != tokenizer.pad_token_id
    task = tasks["binary"]
    for i in range(len(task)):
        gold = task.target_text(i)
        assert tokenizer.decode(task.target_ids(i)) == gold
    odd = '{"modified": [{"name": "crème brûlée (ID: 7)", "note": "日本\\t"}]}\n\t  x'
    assert tokenizer.decode(tokenizer(odd, add_special_tokens=False)["input_ids"]) == odd


def test_splits_use_disjoint_seeds_and_rarely_share_transitions():
    from rlvr_envs.core.util import split_stream
    from rlvr_envs.text_game.task import MiniTextWorldTaskConfig

    assert split_stream(0, "train") != split_stream(0, "test")
    key = lambda row: json.dumps([row["current_state"]["objects"], row["tick_state"]["lastAction"]])  # noqa: E731
    train = {key(r) for r in sim.generate_rows(EASY, split_stream(0, "train"), 1024)}
    test = [key(r) for r in sim.generate_rows(EASY, split_stream(0, "test"), 256)]
    assert sum(k in train for k in test) <= 0.03 * len(test)
    with pytest.raises(ValueError, match="split"):
        MiniTextWorldTaskConfig(split="validation").validate()
    with pytest.raises(ValueError, match="difficulty"):
        MiniTextWorldTaskConfig(difficulty="extreme").validate()


def test_gym_make_builds_the_env_with_task_arguments():
    import gymnasium as gym

    import rlvr_envs  # noqa: F401  (registers the ids)

    env = gym.make("RLVRWorld/MiniTextWorld-v0", size=16, games=["freeze-tray"])
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert len(task) == 16 and {task.transition(i).meta["game"] for i in range(16)} == {"freeze-tray"}
    _, reward, terminated, _, info = env.step(task.target_ids(info["index"]))
    assert terminated and reward == 1.0 and info["parsed"]
    with pytest.raises(TypeError, match="difficulty"):
        gym.make("RLVRWorld/MiniTextWorld-v0", dificulty="hard")
