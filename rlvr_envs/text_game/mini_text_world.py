"""MiniTextWorld: a small procedural text-game simulator that writes ByteSized32 rows.

Why it exists: ByteSized32 needs a download and its prompts run to thousands of tokens;
MiniTextWorld gives the language side an embedded, unlimited, CPU-sized source of
transitions with *the same schema*, so `TextGameTask`'s codec and the text-state verifier
apply unchanged (`RLVRWorld/MiniTextWorld-v0`).

The simulator is an object tree (a room holding the agent and the game's objects) with
real dynamics driven by object types, as ByteSized32 games are:
  * containers hold things; open/close, take/put move them (and fail with a message when
    a rule forbids it: a closed container, an immovable object, ...);
  * devices switch on/off; a switched-on sink fills every empty water container in it by
    *creating* a water object (uuid = max_UUID, which then increments);
  * thermal devices (stove, fridge, freezer) move the temperature of everything inside
    them toward their target each tick; everything else drifts toward room temperature;
    water at >= 100 degrees turns into steam and at <= 0 into ice (the old object is
    *removed* and a new one created), ice above 0 melts back into water;
  * food that gets to freezing point is frozen for good; a burning fire pit burns its
    logs down, turning each spent log into ash;
  * every game scores its sub-goals and can be won, and most can be lost.

One step is ByteSized32's: the action's effect (`action_state`), then the world tick
(`tick_state`), then the score (`next_score_state`). `generate_row(config, seed, index)`
plays a random-but-sensible playthrough (mostly the game's reactive plan, sometimes a
random action) and returns the step at an `index`-determined point of it, with an action
that is the plan's or, more often, a random one (looking around, or an attempt the rules
refuse), so 43-48 % of transitions change the state (ByteSized32's test set: 41 %). It
is a pure function of its arguments. The rules text keeps ByteSized32's three kinds
(object, action, score) but is terse, so that prompts fit a small model on a CPU.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

ROOM_TEMPERATURE = 20
#: degrees per tick an object drifts toward room temperature when no device acts on it
ROOM_DRIFT = 5
BOILING_POINT = 100
MELTING_POINT = 0
#: chilled food is at this temperature or colder; food at MELTING_POINT or colder is frozen (ruined)
COLD_ENOUGH = 4
#: an empty pot this hot is scorched (boil-pot is lost)
SCORCH_TEMPERATURE = 200

#: descriptive properties added to items by the difficulty knob, in this order; only
#: "temperature" takes part in the dynamics (every object that has one warms and cools)
EXTRA_PROPERTIES = ("temperature", "weight", "color", "material")
#: names written without an article ("water (ID: 5)", not "a water (ID: 5)")
MASS_NOUNS = ("water", "steam", "ice", "ash")
COLORS = ("red", "blue", "green", "white", "black", "yellow")
MATERIALS = ("wood", "metal", "glass", "plastic", "cloth", "paper")


# -- configuration ----------------------------------------------------------------------

@dataclass(frozen=True)
class MiniTextWorldConfig:
    """What `generate_row` generates; the difficulty presets are in `DIFFICULTIES`.

    distractors: objects unrelated to the goal (plain items, boxes, baskets, a mug the
        sink can fill) placed in the room or inside each other; they widen the state and
        the action space.
    extra_properties: how many of `EXTRA_PROPERTIES` every item carries on top of the
        ones its type needs (temperature first, so the heat dynamics reach more objects).
    max_steps: the length of the playthrough (it stops earlier when the game ends); the
        transition is taken at a uniformly chosen step of it.
    rollout_plan_rate: the chance that a playthrough step follows the game's plan rather
        than a random action; high, so playthroughs get to the interesting parts (water
        boiling, food chilling, fires burning down, games won and lost).
    plan_rate: the chance that the transition's own action is the plan's; otherwise it is
        random (half idle: look/inventory/examine, half manipulation, often refused). It
        sets how often the state changes: 0.2 gives 43-48 % changed transitions (512 test
        transitions, easy to hard), near the ByteSized32 test set's 41 % (1,210 of 2,954).
    """

    games: tuple[str, ...] = ("boil-pot", "chill-groceries", "freeze-tray", "keep-campfire")
    distractors: int = 0
    extra_properties: int = 0
    max_steps: int = 12
    rollout_plan_rate: float = 0.75
    plan_rate: float = 0.2

    def __post_init__(self):
        if isinstance(self.games, str):
            object.__setattr__(self, "games", (self.games,))
        elif not isinstance(self.games, tuple):
            object.__setattr__(self, "games", tuple(self.games))

    def validate(self) -> None:
        unknown = sorted(set(self.games) - set(GAMES))
        if not self.games or unknown:
            raise ValueError(f"games must be a non-empty subset of {sorted(GAMES)}, got {list(self.games)}")
        if not 0 <= self.distractors <= len(DISTRACTORS):
            raise ValueError(f"distractors must be in [0, {len(DISTRACTORS)}], got {self.distractors}")
        if not 0 <= self.extra_properties <= len(EXTRA_PROPERTIES):
            raise ValueError(f"extra_properties must be in [0, {len(EXTRA_PROPERTIES)}], got {self.extra_properties}")
        if not 1 <= self.max_steps <= 200:
            raise ValueError(f"max_steps must be in [1, 200], got {self.max_steps}")
        for name in ("rollout_plan_rate", "plan_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")


# -- the object tree ----------------------------------------------------------------------

@dataclass(eq=False)
class Thing:
    """One game object; `to_json` writes it exactly as ByteSized32 does."""

    uuid: int
    base: str
    type: str
    properties: dict[str, Any]
    contents: list[Thing] = field(default_factory=list)
    parent: Thing | None = None

    @property
    def name(self) -> str:
        return f"{self.base} (ID: {self.uuid})"

    def is_(self, key: str) -> bool:
        return bool(self.properties.get(key, False))

    @property
    def is_open_container(self) -> bool:
        """Whether what is inside can be seen and reached."""
        return self.is_("isContainer") and self.is_("isOpen")

    def ancestors(self) -> Iterator[Thing]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def holds(self, *types: str) -> list[Thing]:
        return [child for child in self.contents if child.type in types]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "uuid": self.uuid, "type": self.type, "properties": dict(self.properties),
                "contains": [child.name for child in self.contents]}


def container(movable: bool, openable: bool = False, is_open: bool = True, prefix: str = "in") -> dict[str, Any]:
    return {"isContainer": True, "isMoveable": movable, "isOpenable": openable, "isOpen": is_open,
            "containerPrefix": prefix}


def item(movable: bool = True) -> dict[str, Any]:
    return {"isContainer": False, "isMoveable": movable}


def device(is_on: bool) -> dict[str, Any]:
    return {"isActivatable": True, "isOn": is_on}


def thermal(target: int, per_tick: int) -> dict[str, Any]:
    return {"targetTemperature": target, "degreesPerTick": per_tick}


def water_container() -> dict[str, Any]:
    return {"isWaterContainer": True}


class World:
    """The game state: a room (uuid 1) holding the agent (uuid 0) and everything else."""

    def __init__(self, room: str):
        self.max_uuid = 0
        self.agent = self._new("agent", "Agent", container(True))
        self.room = self._new(room, "World", container(True))
        self._attach(self.agent, self.room)
        self.messages: list[str] = []  # what the current tick reports

    def _new(self, base: str, type_: str, properties: dict[str, Any]) -> Thing:
        thing = Thing(self.max_uuid, base, type_, properties)
        self.max_uuid += 1
        return thing

    @staticmethod
    def _attach(thing: Thing, parent: Thing) -> None:
        thing.parent = parent
        parent.contents.append(thing)

    def add(self, base: str, type_: str, properties: dict[str, Any], parent: Thing | None = None) -> Thing:
        """Create an object (uuid = max_UUID, then max_UUID + 1) inside `parent` (the room)."""
        thing = self._new(base, type_, properties)
        self._attach(thing, parent or self.room)
        return thing

    def remove(self, thing: Thing) -> None:
        thing.parent.contents.remove(thing)
        thing.parent = None

    def move(self, thing: Thing, parent: Thing) -> None:
        self.remove(thing)
        self._attach(thing, parent)

    def replace(self, old: Thing, base: str, type_: str, properties: dict[str, Any]) -> Thing:
        """A phase change: `old` disappears and a new object takes its place in its container."""
        parent = old.parent
        self.remove(old)
        return self.add(base, type_, properties, parent)

    def shuffle_uuids(self, rng: random.Random) -> None:
        """Renumber every object but the agent and the room in a random order, so a uuid says
        nothing about an object's role (as in ByteSized32, where it is creation order)."""
        others = [thing for thing in self.things() if thing is not self.room and thing is not self.agent]
        uuids = [thing.uuid for thing in others]
        rng.shuffle(uuids)
        for thing, uuid in zip(others, uuids):
            thing.uuid = uuid

    def things(self) -> list[Thing]:
        """Every object, depth first from the room (the order ByteSized32 lists them in)."""
        out: list[Thing] = []

        def walk(node: Thing) -> None:
            out.append(node)
            for child in node.contents:
                walk(child)

        walk(self.room)
        return out

    def of_type(self, *types: str) -> list[Thing]:
        return [thing for thing in self.things() if thing.type in types]

    def reachable(self) -> list[Thing]:
        """Objects the agent can see and act on: the inventory, and the room through open containers."""
        out: list[Thing] = []

        def walk(node: Thing) -> None:
            for child in node.contents:
                if child is not self.agent:
                    out.append(child)
                if child.is_open_container:
                    walk(child)

        walk(self.room)
        return out

    def in_inventory(self, thing: Thing) -> bool:
        return thing.parent is self.agent

    # -- text the state carries (observation, look, inventory) --------------------------
    def describe(self, thing: Thing) -> str:
        article = "" if thing.base in MASS_NOUNS else "an " if thing.base[0] in "aeiou" else "a "
        clauses = []
        if thing.is_("isActivatable"):
            clauses.append(f"is currently {'on' if thing.is_('isOn') else 'off'}")
        if "temperature" in thing.properties:
            clauses.append(f"is at {thing.properties['temperature']} degrees")
        if thing.type == "FirePit":
            clauses.append("has a fire burning" if thing.is_("isBurning") else "has no fire")
        if thing.is_("isFrozen"):
            clauses.append("is frozen")
        if thing.is_("isContainer"):
            if not thing.is_("isOpen"):
                clauses.append("is closed")
            elif thing.contents:
                inside = ", ".join(self.describe(child) for child in thing.contents)
                clauses.append(f"has {thing.properties['containerPrefix']} it [{inside}]")
            else:
                clauses.append("is empty")
        text = f"{article}{thing.name}"
        return f"{text} that {' and that '.join(clauses)}" if clauses else text

    def look_text(self) -> str:
        lines = [f"You are in the {self.room.base}.  In the {self.room.base}, you see: ", "\tyourself"]
        lines += [f"\t{self.describe(child)}" for child in self.room.contents if child is not self.agent]
        return "\n".join(lines) + "\n"

    def inventory_text(self) -> str:
        if not self.agent.contents:
            return "Your inventory is empty."
        return "You have the following items in your inventory:\n" + "".join(
            f"\t{self.describe(child)}\n" for child in self.agent.contents)

    def clone(self) -> World:
        """An independent copy (the playthrough keeps one per step to pick the transition from)."""
        def copy_tree(thing: Thing, parent: Thing | None) -> Thing:
            twin = Thing(thing.uuid, thing.base, thing.type, dict(thing.properties), parent=parent)
            twin.contents = [copy_tree(child, twin) for child in thing.contents]
            return twin

        twin = object.__new__(World)
        twin.max_uuid, twin.messages = self.max_uuid, []
        twin.room = copy_tree(self.room, None)
        twin.agent = next(child for child in twin.room.contents if child.uuid == self.agent.uuid)
        return twin

    def snapshot(self, task: str, observation: str, last_action: str) -> dict[str, Any]:
        """The state record of a ByteSized32 row."""
        return {"observation": observation, "look": self.look_text(), "inventory": self.inventory_text(),
                "taskDesc": task, "lastAction": last_action,
                "objects": [thing.to_json() for thing in self.things()], "max_UUID": self.max_uuid}


# -- actions -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Action:
    verb: str
    things: tuple[Thing, ...] = ()

    @property
    def text(self) -> str:
        if self.verb == "put":
            thing, target = self.things
            return f"put {thing.name} {target.properties.get('containerPrefix', 'in')} {target.name}"
        if self.verb == "light":
            pit, match = self.things
            return f"light {pit.name} with {match.name}"
        return " ".join([self.verb, *(thing.name for thing in self.things)])

    @property
    def is_idle(self) -> bool:
        """Actions that never change the state by themselves (the tick still runs)."""
        return self.verb in ("look", "inventory", "examine")



#: verbs that flip one boolean property: verb -> (capability, property, new value,
#: "can't be ..." text, "already ..." text, "now ..." text)
TOGGLES = {
    "open": ("isOpenable", "isOpen", True, "opened", "open", "open"),
    "close": ("isOpenable", "isOpen", False, "closed", "closed", "closed"),
    "turn on": ("isActivatable", "isOn", True, "turned on or off", "on", "turned on"),
    "turn off": ("isActivatable", "isOn", False, "turned on or off", "off", "turned off"),
}

def act(world: World, action: Action) -> str:
    """Apply the action's effect; return its message (a refusal leaves the state as it was)."""
    verb, things = action.verb, action.things
    if verb == "look":
        return world.look_text()
    if verb == "inventory":
        return world.inventory_text()
    if verb == "examine":
        return world.describe(things[0])
    if verb == "take":
        (thing,) = things
        if world.in_inventory(thing):
            return f"The {thing.name} is already in your inventory."
        if not thing.is_("isMoveable"):
            return f"The {thing.name} is not moveable."
        closed = [holder for holder in thing.ancestors() if not holder.is_("isOpen")]
        if closed:
            return f"The {thing.name} is inside the closed {closed[0].name}."
        world.move(thing, world.agent)
        return f"You put the {thing.name} in your inventory."
    if verb == "put":
        thing, target = things
        if not world.in_inventory(thing):
            return f"You don't have the {thing.name}."
        if not target.is_("isContainer"):
            return f"The {target.name} is not a container."
        if not target.is_("isOpen"):
            return f"The {target.name} is closed."
        if target is thing or thing in target.ancestors():
            return f"You can't put the {thing.name} inside itself."
        world.move(thing, target)
        return f"The {thing.name} is placed {target.properties['containerPrefix']} the {target.name}."
    if verb in TOGGLES:
        (thing,) = things
        capability, state, value, cannot, word, now = TOGGLES[verb]
        if not thing.is_(capability):
            return f"The {thing.name} can't be {cannot}."
        if thing.is_(state) == value:
            return f"The {thing.name} is already {word}."
        thing.properties[state] = value
        return f"The {thing.name} is now {now}."
    if verb == "light":
        pit, match = things
        if not world.in_inventory(match):
            return f"You don't have the {match.name}."
        if pit.is_("isBurning"):
            return f"The fire in the {pit.name} is already burning."
        world.remove(match)  # a struck match is used up, lit fire or not
        if not pit.holds("Log"):
            return f"The {match.name} burns out: there is no log in the {pit.name}."
        pit.properties["isBurning"] = True
        return f"You light the {pit.name} with the {match.name}."
    raise ValueError(f"unknown verb {verb!r}")


def candidate_actions(world: World) -> list[Action]:
    """Every action the agent could type about what it can reach; like a player's, many of
    them are refused (opening a pot, switching on a log, putting a match into an apple)."""
    reachable = world.reachable()
    actions = [Action("look"), Action("inventory")]
    actions += [Action("examine", (thing,)) for thing in reachable]
    actions += [Action("take", (thing,)) for thing in reachable if not world.in_inventory(thing)]
    for thing in world.agent.contents:
        actions += [Action("put", (thing, target)) for target in reachable if target is not thing]
    actions += [Action(verb, (thing,)) for thing in reachable for verb in ("open", "close", "turn on", "turn off")]
    matches = [thing for thing in world.agent.contents if thing.type == "Match"]
    actions += [Action("light", (pit, match)) for pit in reachable if pit.type == "FirePit" for match in matches]
    return actions


# -- the world tick ----------------------------------------------------------------------------

def _step_toward(value: int, target: int, rate: int) -> int:
    return value + max(-rate, min(rate, target - value))


def _active_thermal_device(thing: Thing) -> Thing | None:
    """The innermost switched-on heater/cooler around `thing` (a door must be closed)."""
    for holder in thing.ancestors():
        if "targetTemperature" in holder.properties and holder.is_("isOn"):
            if not holder.is_("isOpenable") or not holder.is_("isOpen"):
                return holder
    return None


def tick(world: World) -> None:
    """One world tick, in a fixed order the rules text spells out."""
    # 1. heat: every object with a temperature moves toward its device's target, or room temperature
    for thing in world.things():
        if "temperature" not in thing.properties:
            continue
        holder = _active_thermal_device(thing)
        target, rate = ((holder.properties["targetTemperature"], holder.properties["degreesPerTick"]) if holder
                        else (ROOM_TEMPERATURE, ROOM_DRIFT))
        thing.properties["temperature"] = _step_toward(thing.properties["temperature"], target, rate)
    # 2. phase changes of water: the old object is removed and a new one created
    for thing in world.of_type("Water", "Ice"):
        temperature = thing.properties["temperature"]
        if thing.type == "Water" and temperature >= BOILING_POINT:
            new = world.replace(thing, "steam", "Steam", {**item(False), "temperature": temperature})
            world.messages.append(f"The {thing.name} boils into {new.name}.")
        elif thing.type == "Water" and temperature <= MELTING_POINT:
            new = world.replace(thing, "ice", "Ice", {**item(True), "temperature": temperature})
            world.messages.append(f"The {thing.name} freezes into {new.name}.")
        elif thing.type == "Ice" and temperature > MELTING_POINT:
            new = world.replace(thing, "water", "Water", {**item(False), "temperature": temperature})
            world.messages.append(f"The {thing.name} melts into {new.name}.")
    # 3. an empty pot left on a hot stove scorches
    for pot in world.of_type("Pot"):
        if pot.properties["temperature"] >= SCORCH_TEMPERATURE and not pot.holds("Water") and not pot.is_("isScorched"):
            pot.properties["isScorched"] = True
            world.messages.append(f"The empty {pot.name} is scorched.")
    # 4. food that reaches freezing point is frozen (and stays so)
    for food in world.of_type("Food"):
        if food.properties["temperature"] <= MELTING_POINT and not food.is_("isFrozen"):
            food.properties["isFrozen"] = True
            world.messages.append(f"The {food.name} is frozen.")
    # 5. a running sink fills every empty water container in it (creating the water)
    for sink in world.of_type("Sink"):
        if not sink.is_("isOn"):
            continue
        for vessel in list(sink.contents):
            if vessel.is_("isWaterContainer") and not vessel.holds("Water", "Ice", "Steam"):
                water = world.add("water", "Water", {**item(False), "temperature": ROOM_TEMPERATURE}, vessel)
                world.messages.append(f"The {sink.name} fills the {vessel.name} with {water.name}.")
    # 6. a burning fire pit burns its logs; a spent log becomes ash; no log left, no fire
    for pit in world.of_type("FirePit"):
        if not pit.is_("isBurning"):
            continue
        pit.properties["burnTime"] += 1
        for log in pit.holds("Log"):
            log.properties["fuel"] -= 1
            if log.properties["fuel"] <= 0:
                ash = world.replace(log, "ash", "Ash", item(True))
                world.messages.append(f"The {log.name} burns down to {ash.name}.")
        if not pit.holds("Log"):
            pit.properties["isBurning"] = False
            world.messages.append(f"The fire in the {pit.name} goes out.")


# -- rules text (ByteSized32's object/action/score rules, kept terse for short prompts) -------

OBJECT_RULES = {
    "GameObject": (
        "Objects may be containers (isContainer) and moveable (isMoveable). Each tick, a temperature moves "
        f"{ROOM_DRIFT} toward {ROOM_TEMPERATURE}, or degreesPerTick toward targetTemperature inside a device that "
        "is on (and closed, if it has a door). A new object gets uuid max_UUID, then max_UUID grows by 1."),
    "Container": "Containers hold objects (contains); things go in or out only while isOpen.",
    "Stove": "Stove: a device things go on.",
    "Sink": ("Sink: at the end of each tick while on, fills each water container (isWaterContainer) in it "
             f"holding no water, ice or steam with new water at {ROOM_TEMPERATURE}."),
    "Pot": f"Pot: a water container; without water at {SCORCH_TEMPERATURE} or hotter it becomes isScorched.",
    "Water": (f"Water: after temperatures change, water at {BOILING_POINT} or more becomes new steam, at "
              f"{MELTING_POINT} or less new ice; ice above {MELTING_POINT} becomes new water (old object removed; "
              "same container and temperature)."),
    "Fridge": "Fridge: a cooling device with a door.",
    "Freezer": "Freezer: a cooling device with a door.",
    "Food": f"Food: after temperatures change, food at {MELTING_POINT} or colder becomes isFrozen for good.",
    "IceTray": "IceTray: a water container.",
    "FirePit": ("FirePit: each tick while isBurning, burnTime grows by 1 and each log in it loses 1 fuel; a log "
                "at 0 fuel is replaced by new ash; with no log left, isBurning becomes false."),
    "Match": "Match: used up when struck.",
}

ACTION_RULES = {
    "look": "look, inventory, examine: change nothing.",
    "take": "take X: X must be moveable, not held, not in a closed container; X moves into the agent.",
    "put": "put X in/on Y: X must be held and Y an open container; X moves into Y.",
    "open": "open/close X: X must be isOpenable; sets isOpen.",
    "turn": "turn on/off X: X must be isActivatable; sets isOn.",
    "light": "light X with M: M must be held and is removed; if X holds a log and is not burning, it starts burning.",
    "tick": "A refused action changes nothing. After every action the world ticks.",
}

BASE_TYPES = ("GameObject", "Container")


# -- the games --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Score:
    score: int
    lost: bool = False
    won: bool = False


@dataclass(frozen=True)
class Game:
    """A game: how to set it up, a reactive plan that solves it, and how it is scored.

    `plan` looks at the current world and returns the next sensible action (None when the
    plan can only wait); random actions interleaved with it keep playthroughs varied.
    """

    name: str
    room: str
    task: str
    object_types: tuple[str, ...]
    verbs: tuple[str, ...]
    score_rule: str
    setup: Callable[[World, random.Random], None]
    plan: Callable[[World], Action | None]
    score: Callable[[World], Score]

    def rules(self) -> dict[str, str]:
        objects = "\n".join(OBJECT_RULES[kind] for kind in (*BASE_TYPES, *self.object_types))
        verbs = ("look", "take", "put", "open", "turn", *self.verbs, "tick")
        return {"object": objects, "action": "\n".join(ACTION_RULES[verb] for verb in verbs),
                "score": self.score_rule}


def _fetch(world: World, thing: Thing) -> Action:
    """Take `thing`, opening what holds it first (the first step of moving it anywhere)."""
    for holder in reversed(list(thing.ancestors())):
        if holder.is_("isOpenable") and not holder.is_("isOpen"):
            return Action("open", (holder,))
    return Action("take", (thing,))


def _place(world: World, thing: Thing, target: Thing) -> Action:
    """The next action that moves `thing` into `target` (open it, take the thing, put it)."""
    if target.is_("isOpenable") and not target.is_("isOpen"):
        return Action("open", (target,))
    if not world.in_inventory(thing):
        return _fetch(world, thing)
    return Action("put", (thing, target))


def _switch(thing: Thing, on: bool) -> Action | None:
    if thing.is_("isOn") == on:
        return None
    return Action("turn on" if on else "turn off", (thing,))


def _only(world: World, type_: str) -> Thing:
    return world.of_type(type_)[0]


# Shared appliances. Names and settings vary with the seed so that playthroughs differ from
# their first step (a fixed kitchen would make many train and test transitions identical).
def _add_stove(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("stove", "cooktop")), "Stove", {
        **container(False, prefix="on"), **device(False),
        **thermal(rng.choice((200, 250, 300)), rng.choice((20, 25, 30, 40)))})


def _add_sink(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("sink", "basin")), "Sink", {**container(False), **device(rng.random() < 0.2)})


def _add_fridge(world: World, rng: random.Random) -> Thing:
    return world.add(rng.choice(("fridge", "refrigerator")), "Fridge", {
        **container(False, openable=True, is_open=False), **device(rng.random() < 0.5),
        **thermal(rng.randint(1, COLD_ENOUGH), rng.choice((3, 4, 5)))})


def _add_freezer(world: World, rng: random.Random, is_on: bool) -> Thing:
    return world.add(rng.choice(("freezer", "chest freezer")), "Freezer", {
        **container(False, openable=True, is_open=False), **device(is_on),
        **thermal(rng.choice((-20, -15, -10)), rng.choice((5, 10, 15)))})


# boil-pot: fill a pot at the sink and boil it on the stove; an empty pot left on the stove scorches
def _setup_boil(world: World, rng: random.Random) -> None:
    _add_stove(world, rng)
    sink = _add_sink(world, rng)
    world.add(rng.choice(("pot", "saucepan", "kettle")), "Pot", {
        **container(True), **water_container(), "temperature": ROOM_TEMPERATURE, "isScorched": False},
        rng.choice([world.room, sink]))


def _plan_boil(world: World) -> Action | None:
    stove, sink, pot = _only(world, "Stove"), _only(world, "Sink"), _only(world, "Pot")
    if not pot.holds("Water"):
        if pot.parent is not sink:
            return _place(world, pot, sink)
        return _switch(sink, True)
    if pot.parent is not stove:
        return _switch(sink, False) or _place(world, pot, stove)
    return _switch(stove, True)


def _score_boil(world: World) -> Score:
    pots = world.of_type("Pot")
    with_water = [pot for pot in pots if pot.holds("Water", "Steam")]
    heating = [pot for pot in with_water if pot.parent.type == "Stove" and pot.parent.is_("isOn")]
    boiled = bool(world.of_type("Steam"))
    return Score(int(bool(with_water)) + int(bool(heating)) + int(boiled),
                 lost=any(pot.is_("isScorched") for pot in pots), won=boiled)


# chill-groceries: chill every food item in the fridge (closed and on); the freezer ruins food
FOODS = ("milk", "cheese", "butter", "yogurt", "chicken", "fish")


def _setup_chill(world: World, rng: random.Random) -> None:
    _add_fridge(world, rng)
    _add_freezer(world, rng, is_on=True)
    counter = world.add(rng.choice(("counter", "table", "shelf")), "Counter", container(False, prefix="on"))
    for base in rng.sample(FOODS, rng.choice([1, 2])):
        world.add(base, "Food", {**item(True), "temperature": ROOM_TEMPERATURE, "isFrozen": False},
                  rng.choice([counter, world.room]))


def _plan_chill(world: World) -> Action | None:
    fridge = _only(world, "Fridge")
    for food in world.of_type("Food"):
        if food.parent is not fridge:
            return _place(world, food, fridge)
    if fridge.is_("isOpen"):
        return Action("close", (fridge,))
    return _switch(fridge, True)


def _score_chill(world: World) -> Score:
    foods = world.of_type("Food")
    cold = [food for food in foods if food.properties["temperature"] <= COLD_ENOUGH and not food.is_("isFrozen")]
    return Score(len(cold), lost=any(food.is_("isFrozen") for food in foods), won=len(cold) == len(foods))


# freeze-tray: fill the ice tray at the sink, then freeze it in the closed, running freezer
def _setup_freeze(world: World, rng: random.Random) -> None:
    _add_freezer(world, rng, is_on=rng.random() < 0.5)
    sink = _add_sink(world, rng)
    world.add(rng.choice(("ice tray", "ice mold")), "IceTray", {**container(True), **water_container()},
              rng.choice([world.room, sink]))


def _plan_freeze(world: World) -> Action | None:
    freezer, sink, tray = _only(world, "Freezer"), _only(world, "Sink"), _only(world, "IceTray")
    if not tray.holds("Water", "Ice"):
        if tray.parent is not sink:
            return _place(world, tray, sink)
        return _switch(sink, True)
    if tray.parent is not freezer:
        return _switch(sink, False) or _place(world, tray, freezer)
    if freezer.is_("isOpen"):
        return Action("close", (freezer,))
    return _switch(freezer, True)


def _score_freeze(world: World) -> Score:
    tray = _only(world, "IceTray")
    frozen = bool(world.of_type("Ice"))
    return Score(int(bool(tray.holds("Water", "Ice"))) + int(tray.parent.type == "Freezer") + int(frozen),
                 won=frozen)


# keep-campfire: light the fire pit and keep it fed with logs until it has burned long enough
def _setup_campfire(world: World, rng: random.Random) -> None:
    fuels = [rng.randint(2, 3) for _ in range(rng.randint(2, 3))]
    # logs burn side by side, so the longest fire adds each log when the last one has 1 fuel left
    longest_fire = sum(fuels) - (len(fuels) - 1)
    goal = longest_fire - rng.randint(0, 1)
    world.add(rng.choice(("fire pit", "fire ring")), "FirePit", {
        **container(False), "isBurning": False, "burnTime": 0, "burnGoal": goal})
    for fuel in fuels:
        world.add(rng.choice(("log", "branch")), "Log", {**item(True), "fuel": fuel})
    for _ in range(rng.randint(1, 2)):
        world.add("match", "Match", item(True))


def _plan_campfire(world: World) -> Action | None:
    pit = _only(world, "FirePit")
    spare_logs = [log for log in world.of_type("Log") if log.parent is not pit]
    held_logs = [log for log in spare_logs if world.in_inventory(log)]
    if not pit.is_("isBurning"):
        if not pit.holds("Log"):
            return _place(world, spare_logs[0], pit) if spare_logs else None
        if len(held_logs) < len(spare_logs):  # gather the spare logs first: fetching one takes a tick
            return _fetch(world, next(log for log in spare_logs if log not in held_logs))
        matches = world.of_type("Match")
        if not matches:
            return None
        return Action("light", (pit, matches[0])) if world.in_inventory(matches[0]) else _fetch(world, matches[0])
    if held_logs and max(log.properties["fuel"] for log in pit.holds("Log")) <= 1:
        return Action("put", (held_logs[0], pit))
    if len(held_logs) < len(spare_logs):
        return _fetch(world, next(log for log in spare_logs if log not in held_logs))
    return None


def _score_campfire(world: World) -> Score:
    pit = _only(world, "FirePit")
    burned = pit.properties["burnTime"]
    won = burned >= pit.properties["burnGoal"]
    out = not pit.is_("isBurning") and (burned > 0 or not world.of_type("Match"))
    return Score(burned, lost=out and not won, won=won)


GAMES: dict[str, Game] = {game.name: game for game in (
    Game("boil-pot", "kitchen", "Your task is to boil water.",
         ("Stove", "Sink", "Pot", "Water"), (),
         "1 point when a pot holds water, 1 more while it is on a stove that is on, 1 more and the game is won "
         "when the water boils into steam. The game is lost if a pot is scorched.",
         _setup_boil, _plan_boil, _score_boil),
    Game("chill-groceries", "kitchen", "Your task is to chill the groceries in the fridge.",
         ("Fridge", "Freezer", "Food"), (),
         f"1 point for each food at {COLD_ENOUGH} or colder and not frozen; the game is won when every food is. "
         "The game is lost if any food is frozen.",
         _setup_chill, _plan_chill, _score_chill),
    Game("freeze-tray", "kitchen", "Your task is to make ice.",
         ("Freezer", "Sink", "IceTray", "Water"), (),
         "1 point when the ice tray holds water or ice, 1 more while it is in a freezer, 1 more and the game is "
         "won when any ice exists.",
         _setup_freeze, _plan_freeze, _score_freeze),
    Game("keep-campfire", "campsite", "Your task is to keep the campfire burning.",
         ("FirePit", "Match"), ("light",),
         "The score is the fire pit's burnTime; the game is won when it reaches burnGoal. The game is lost if the "
         "fire goes out, or if no match is left and the fire never burned.",
         _setup_campfire, _plan_campfire, _score_campfire),
)}


def game_rules(game: str) -> dict[str, str]:
    """The human-readable {"object", "action", "score"} rules of a game (ByteSized32 style)."""
    if game not in GAMES:
        raise KeyError(f"unknown MiniTextWorld game {game!r}; games: {sorted(GAMES)}")
    return GAMES[game].rules()


def all_rules() -> dict[str, dict[str, str]]:
    """Rules for every game, in the shape `TextGameTask(rules=...)` takes."""
    return {name: game_rules(name) for name in GAMES}


# -- distractors and the difficulty knob ----------------------------------------------------------

#: (base name, type, properties) of objects no goal needs; containers may hold other distractors
DISTRACTORS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("apple", "Apple", item()),
    ("book", "Book", item()),
    ("spoon", "Spoon", item()),
    ("box", "Box", container(True, openable=True, is_open=False)),
    ("mug", "Mug", {**container(True), **water_container()}),
    ("basket", "Basket", container(True)),
    ("towel", "Towel", item()),
    ("plate", "Plate", container(True, prefix="on")),
)


def _extra_properties(rng: random.Random, count: int) -> dict[str, Any]:
    values = {"temperature": ROOM_TEMPERATURE, "weight": rng.randrange(50, 2000, 10),
              "color": rng.choice(COLORS), "material": rng.choice(MATERIALS)}
    return {key: values[key] for key in EXTRA_PROPERTIES[:count]}


def build_world(game: Game, config: MiniTextWorldConfig, rng: random.Random) -> World:
    """The initial world: the game's objects, then distractors, then the extra properties."""
    world = World(game.room)
    game.setup(world, rng)
    for base, type_, properties in rng.sample(DISTRACTORS, config.distractors):
        holders = [world.room] + [thing for thing in world.reachable()
                                  if thing.type in ("Box", "Basket", "Plate") and thing.is_("isMoveable")]
        world.add(base, type_, dict(properties), rng.choice(holders))
    for thing in world.things():
        if thing.is_("isMoveable") and thing.type not in ("World", "Agent"):
            for key, value in _extra_properties(rng, config.extra_properties).items():
                thing.properties.setdefault(key, value)
    world.shuffle_uuids(rng)
    return world


# -- playthroughs and rows ----------------------------------------------------------------------

def choose_action(world: World, game: Game, rng: random.Random, plan_rate: float) -> Action:
    """The game's plan with probability `plan_rate`, else a random action (half of them idle)."""
    if rng.random() < plan_rate:
        planned = game.plan(world)
        return planned if planned is not None else Action("look")
    candidates = candidate_actions(world)
    idle = [a for a in candidates if a.is_idle]
    busy = [a for a in candidates if not a.is_idle]
    return rng.choice(idle if not busy or rng.random() < 0.5 else busy)


def score_state(score: Score) -> dict[str, Any]:
    return {"score": score.score, "gameOver": score.lost or score.won, "gameWon": score.won}


def run_tick(world: World, action_message: str) -> str:
    """Tick the world; return the step's observation (the action's message, then the tick's)."""
    world.messages = []
    tick(world)
    return "\n".join([action_message, *world.messages])


def step_row(world: World, game: Game, action: Action, observation: str, last_action: str) -> dict[str, Any]:
    """Play one step and return it as a ByteSized32 row (without `game`/`state_id`)."""
    current = world.snapshot(game.task, observation, last_action)
    current_score = score_state(game.score(world))
    message = act(world, action)
    action_state = world.snapshot(game.task, message, action.text)
    tick_state = world.snapshot(game.task, run_tick(world, message), action.text)
    return {"current_state": current, "action_state": action_state, "tick_state": tick_state,
            "current_score_state": current_score, "next_score_state": score_state(game.score(world))}


def generate_row(config: MiniTextWorldConfig, seed: int, index: int) -> dict[str, Any]:
    """Transition number `index` of the stream `seed`: a pure function of its arguments.

    The game is `config.games[index % len(games)]` (so every slice is balanced). A mostly
    goal-directed playthrough of up to `max_steps` steps is played (it stops when the game
    ends); at a uniformly chosen step of it a fresh action is drawn (the plan's with
    probability `plan_rate`, else a random one) and that step is the transition.
    """
    config.validate()
    rng = random.Random(f"minitextworld/{seed}/{index}")
    game = GAMES[config.games[index % len(config.games)]]
    world = build_world(game, config, rng)
    observation, last_action = world.look_text(), ""
    history: list[tuple[World, str, str]] = []  # the world before each step, with the observation and action that led to it
    for _ in range(config.max_steps):
        history.append((world.clone(), observation, last_action))
        action = choose_action(world, game, rng, config.rollout_plan_rate)
        observation, last_action = run_tick(world, act(world, action)), action.text
        outcome = game.score(world)
        if outcome.lost or outcome.won:
            break
    world, observation, last_action = history[rng.randrange(len(history))]
    action = choose_action(world, game, rng, config.plan_rate)
    return {**step_row(world, game, action, observation, last_action), "game": game.name, "state_id": index}


def generate_rows(config: MiniTextWorldConfig, seed: int, count: int, start: int = 0) -> list[dict[str, Any]]:
    return [generate_row(config, seed, index) for index in range(start, start + count)]


DIFFICULTIES: dict[str, MiniTextWorldConfig] = {
    "easy": MiniTextWorldConfig(distractors=0, extra_properties=0, max_steps=12),
    "medium": MiniTextWorldConfig(distractors=2, extra_properties=1, max_steps=16),
    "hard": MiniTextWorldConfig(distractors=4, extra_properties=3, max_steps=24),
}
