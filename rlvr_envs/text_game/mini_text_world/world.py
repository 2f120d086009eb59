"""MiniTextWorld's world rules: the object tree, devices, heat, the world tick and the actions.

Everything a game is made of and everything that happens in it, whatever the game: a room
(uuid 1) holds the agent (uuid 0) and the objects; actions move objects and flip their
switches (or are refused with a message); each tick moves temperatures, changes water's
phase, scorches empty pots, freezes food, fills vessels at running sinks and burns logs.
The rules text the prompts carry (`OBJECT_RULES`, `ACTION_RULES`) describes exactly this.
The games (`games/`) only set up a world, plan in it and score it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
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

#: names written without an article ("water (ID: 5)", not "a water (ID: 5)")
MASS_NOUNS = ("water", "steam", "ice", "ash")


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
