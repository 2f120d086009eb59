"""Test data: the real samples in ../shared/data (skipping with a reason when absent) and
small data written in the real datasets' exact formats from our embedded generators.

A helper module, not a test module: tests import from here, never from each other.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
#: where each sample folder's files come from (what a newcomer needs besides the path)
ORIGIN = {
    "bytesized32": "rows and human-written rules of ByteSized32-State-Prediction, github.com/cognitiveailab/"
                   "GPT-simulator (`rlvr-world data bytesized32` fetches the full set for the envs)",
    "wma": "prompt files of RLVR-World (MIT), github.com/thuml/RLVR-World (`rlvr-world data wma` fetches the WMA "
           "records for the envs)",
    "rt1": "frac_action_ranges.json is RLVR-World's (MIT), github.com/thuml/RLVR-World",
    "simpler": "success rates published by SimplerEnv (MIT, github.com/simpler-env/SimplerEnv) and RLVR-World",
}


def shared_data_or_skip(*parts: str) -> Path:
    """A path under ../shared/data, or skip: this is the real-data layer of the suite. The
    reason says where the samples go and where they come from, since it is all a newcomer
    running the suite without them sees."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        origin = f" Origin: {ORIGIN[parts[0]]}." if parts and parts[0] in ORIGIN else ""
        pytest.skip(f"real-data sample {path} is absent: these tests read the project's small real samples "
                    f"(bytesized32/, rt1/, simpler/, wma/) from {SHARED_DATA}, the shared/data folder beside "
                    f"this checkout; copy that folder there to run them.{origin}")
    return path


def write_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


# -- generated data in the real formats ---------------------------------------------------------

@functools.cache
def generated_bytesized32_dir(size: int = 24) -> str:
    """A data root laid out like ByteSized32-State-Prediction (`bytesized32/test_sample.jsonl`
    and the three human-written rule files), holding MiniTextWorld transitions."""
    from rlvr_envs.text_game import bytesized32, mini_text_world

    root = Path(tempfile.mkdtemp(prefix="rlvr_bs32_"))
    folder = root / "bytesized32"
    write_jsonl(folder / "test_sample.jsonl",
                mini_text_world.generate_rows(mini_text_world.DIFFICULTIES["easy"], 1, size))
    rules = mini_text_world.all_rules()
    (folder / bytesized32.RULES_DIRNAME).mkdir(parents=True)
    for kind in bytesized32.RULE_KINDS:
        text = json.dumps({game: rules[game][kind] for game in rules})
        (folder / bytesized32.RULES_DIRNAME / f"{kind}_rules.json").write_text(text, encoding="utf-8")
    return str(root)


@functools.cache
def generated_wma_dir(size: int = 12) -> str:
    """A data root holding MiniWeb transitions as WMA JSONL rows (`wma/records.jsonl`)."""
    import dataclasses

    from rlvr_envs.web.task import MiniWebTaskConfig, miniweb_records

    root = Path(tempfile.mkdtemp(prefix="rlvr_wma_"))
    rows = []
    for k, record in enumerate(miniweb_records(MiniWebTaskConfig(size=size))):
        row = dataclasses.asdict(record)
        rows.append({"task_id": k, "step_idx": 1, "url": row["url"], "objective": row["objective"],
                     "previous_actions": list(row["previous_actions"]), "current_action": row["current_action"],
                     "observation": row["observation"], "next_state_acctree": row["next_state_acctree"]})
    write_jsonl(root / "wma" / "records.jsonl", rows)
    return str(root)


# -- video fixtures in the real formats (RT-1 RLDS -> npz, DINO-WM deformables, tokenizers) -------

#: RT-1 action keys in a non-alphabetical order, as a writer might emit them (the reader sorts)
RT1_ACTION_LAYOUT = (("world_vector", 3), ("terminate_episode", 3), ("rotation_delta", 3),
                     ("gripper_closedness_action", 1), ("base_displacement_vertical_rotation", 1),
                     ("base_displacement_vector", 2))


@functools.cache
def pusht_fixture_frames(count: int, steps: int = 10, stride: int = 5) -> tuple:
    """`count` short clips (uint8 [steps, 64, 64, 3], every `stride`-th frame) cut from the
    embedded PushT held-out episodes (recorded from the real simulator, cached per machine).

    The RT-1 and DINO-WM fixtures carry these frames in their own formats, so the shipped
    PushT tokenizer (trained, unlike a random one) can show the video invariant on them.
    """
    from rlvr_envs.video.pusht import PushTEpisodeDataset
    from rlvr_envs.video.task import embedded_heldout_dir

    source = PushTEpisodeDataset(embedded_heldout_dir(2, 64))
    span = steps * stride
    clips = []
    for position in range(len(source)):
        frames = source[position].frames
        clips += [frames[start:start + span:stride] for start in range(0, len(frames) - span + 1, span)]
    if len(clips) < count:
        raise RuntimeError(f"the embedded held-out set holds {len(clips)} clips of {span} steps, {count} wanted")
    return tuple(clips[:count])


def rt1_fixture_episode(seed: int, frames):
    """(frames, {action key: values [T, dim]}, expected [T, 13] in alphabetical key order)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    steps = len(frames)
    actions = {}
    for name, dim in RT1_ACTION_LAYOUT:
        if name == "terminate_episode":
            onehot = np.zeros((steps, dim), dtype=np.int64)
            onehot[:, 1] = 1
            onehot[-1] = [1, 0, 0]
            actions[name] = onehot
        else:
            actions[name] = rng.uniform(-1, 1, size=(steps, dim)).astype(np.float32)
    expected = np.concatenate([actions[name] for name in sorted(actions)], axis=1).astype(np.float32)
    return frames, actions, expected


def png_bytes(array) -> bytes:
    """A frame (uint8 [H, W, 3]) PNG-encoded, as RT-1's RLDS shards store images."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def write_rlds_shard(path: Path, episodes, mutate=None) -> Path:
    """One `tf.train.Example` per episode with flattened `steps/...` keys and PNG-encoded
    images, as RT-1's RLDS TFRecord shards store them (written with `tfrecord`'s writer).
    `mutate(number, datum)` may corrupt an episode's record before it is written."""
    import numpy as np
    from tfrecord import TFRecordWriter

    writer = TFRecordWriter(str(path))
    for number, (frames, actions, _) in enumerate(episodes):
        steps = frames.shape[0]
        datum = {
            "steps/observation/image": ([png_bytes(f) for f in frames], "byte"),
            "steps/observation/natural_language_instruction": ([b"pick coke can"] * steps, "byte"),
            "steps/observation/natural_language_embedding": (np.zeros(steps * 512, np.float32), "float"),
            "steps/is_first": ([1] + [0] * (steps - 1), "int"),
            "steps/is_last": ([0] * (steps - 1) + [1], "int"),
            "steps/is_terminal": ([0] * (steps - 1) + [1], "int"),
            "steps/reward": (np.zeros(steps, np.float32), "float"),
        }
        for name, values in actions.items():
            datum[f"steps/action/{name}"] = (values.ravel(), "int" if values.dtype == np.int64 else "float")
        if mutate is not None:
            mutate(number, datum)
        writer.write(datum)
    writer.close()
    return path


@functools.cache
def generated_rt1_dir(episodes: int = 4, upscale: int = 2) -> str:
    """RT-1 episodes written as RLDS TFRecord shards (two, real file names, PNG images) and
    converted to npz by the project's converter (`data_dir/{train,test}`); episode 0 is the
    test split. Frames are PushT clips upscaled to 128x128, so a 64x64 tokenizer resizes them."""
    import numpy as np

    from rlvr_envs.video import rt1

    root = Path(tempfile.mkdtemp(prefix="rlvr_rt1_"))
    src = root / "rlds"
    src.mkdir()
    clips = [np.repeat(np.repeat(clip, upscale, axis=1), upscale, axis=2) for clip in pusht_fixture_frames(episodes)]
    made = [rt1_fixture_episode(seed, clip) for seed, clip in enumerate(clips)]
    half = (episodes + 1) // 2
    write_rlds_shard(src / "fractal20220817_data-train.tfrecord-00000-of-00002", made[:half])
    write_rlds_shard(src / "fractal20220817_data-train.tfrecord-00001-of-00002", made[half:])
    rt1.convert_rlds_to_npz(src, root / "npz", image_shape=clips[0].shape[1:], progress=False)
    return str(root / "npz")


@functools.cache
def generated_deformable_dir(name: str = "rope", episodes: int = 3, particles: int = 5) -> str:
    """A DINO-WM Rope/Granular folder: `states.pth` [N, T, P, 4], `actions.pth` [N, T, 4] and
    `{i:06d}/obses.pth` uint8 [T, 64, 64, 3] (PushT clips), saved with `torch.save` as DINO-WM does."""
    import torch

    root = Path(tempfile.mkdtemp(prefix=f"rlvr_{name}_")) / name
    root.mkdir()
    offset = 0 if name == "rope" else 1  # the two datasets get different clips
    clips = pusht_fixture_frames(episodes + 1)[offset:offset + episodes]
    steps = len(clips[0])
    generator = torch.Generator().manual_seed(len(name))
    torch.save(torch.randn(episodes, steps, particles, 4, generator=generator), root / "states.pth")
    torch.save(torch.randn(episodes, steps, 4, generator=generator), root / "actions.pth")
    for index, clip in enumerate(clips):
        (root / f"{index:06d}").mkdir()
        torch.save(torch.from_numpy(clip.copy()), root / f"{index:06d}" / "obses.pth")
    return str(root)


@functools.cache
def untrained_tokenizer_dir(height: int, width: int, seed: int = 0) -> str:
    """A small randomly initialised `FrameTokenizer` (8x8 pixels a code, 1,000 codes) saved
    as a checkpoint: the task contract does not depend on the tokenizer's quality."""
    import torch

    from rlvr_envs.video.frame_tokenizer import FrameTokenizer, FrameTokenizerConfig

    torch.manual_seed(seed)
    config = FrameTokenizerConfig(resolution=(height, width), downsample=8, levels=(8, 5, 5, 5), channels=(8, 16, 16))
    return str(FrameTokenizer(config).save(Path(tempfile.mkdtemp(prefix="rlvr_tok_"))))


def write_action_ranges(path: Path, low, high, names=None) -> Path:
    """A ranges JSON in the format of RLVR-World's `frac_action_ranges.json`."""
    rows = [[float(a), float(b)] for a, b in zip(low, high)]
    data = {"shape": [len(rows), 2], "columns": ["min", "max"], "values": rows}
    if names is not None:
        data["row_names_inferred_alphabetical_tfds_key_order"] = list(names)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def video_fixture_kwargs(dataset: str) -> dict:
    """`gym.make` arguments of a non-PushT video id on the fixtures above, with the shipped
    (trained) PushT tokenizer and MAE (no LPIPS weights needed). RT-1 frames are 128x128, so
    every RT-1 run also resizes them to the tokenizer's 64x64."""
    from rlvr_envs.video.task import default_tokenizer_dir

    data_dir = generated_rt1_dir() if dataset == "rt1" else generated_deformable_dir(dataset)
    return {"data_dir": data_dir, "tokenizer": str(default_tokenizer_dir()), "reward": "mae"}


def registry_test_kwargs(env_id: str) -> dict:
    """Arguments that make an id buildable with no external data.

    Ids over external datasets run on data written in that dataset's exact format from our
    embedded generators (the real samples are tested separately, see tests/samples.py).
    """
    from rlvr_envs.registration import entry

    if env_id.startswith("RLVRWorld/TextGame"):
        return {"data_dir": generated_bytesized32_dir(), "split": "test_sample"}
    if env_id.startswith("RLVRWorld/WebState"):
        return {"data_dir": generated_wma_dir(), "split": "all"}
    if env_id.startswith("RLVRWorld/PushT"):  # a small embedded held-out set; MAE needs no LPIPS weights
        return {"episodes": 2, "reward": "mae", "size": 12}
    dataset = entry(env_id).kwargs.get("dataset")
    if dataset in ("rt1", "rope", "granular"):
        return video_fixture_kwargs(dataset)
    available, hint = entry(env_id).availability()
    if not available:
        pytest.skip(f"{env_id}: external data absent here ({hint})")
    return {}


# -- the real WebArena pairs (../shared/data/wma) ------------------------------------------------

@functools.cache
def real_wma_dir() -> str:
    """A data root holding the two real WebArena transitions as WMA JSONL (or skip)."""
    root = Path(tempfile.mkdtemp(prefix="rlvr_wma_real_"))
    write_jsonl(root / "wma" / "real_pairs.jsonl", real_records())
    return str(root)


def real_pairs() -> list[tuple[str, str, str]]:
    """(observation, action, next tree) of the two real examples.

    The next trees sit in the examples' answers after `[Next State]:`, on the same line as a
    `Tab 0 (current): <title>` header; that header is cut off here (in observations it has
    its own line, which the parser skips)."""
    path = shared_data_or_skip("wma", "text_only_acctree_format.json")
    pairs = []
    for prompt, answer in json.loads(path.read_text(encoding="utf-8"))["examples"]:
        observation, action = prompt.split("CURRENT OBSERVATION:\n", 1)[1].split("\n CURRENT ACTION: ")
        following = answer.split("[Next State]:", 1)[1]
        following = re.sub(r"^\s*Tab \d+ \(current\): .*? (?=\[\d+\] RootWebArea)", "", following, count=1)
        pairs.append((observation, action.strip(), following))
    return pairs


def real_records() -> list[dict]:
    """The two real transitions as WMA rows (fields read from the real prompts)."""
    from rlvr_envs.web import wma

    path = shared_data_or_skip("wma", "text_only_acctree_format.json")
    rows = []
    for k, ((prompt, _), (_, _, following)) in enumerate(zip(json.loads(path.read_text())["examples"], real_pairs())):
        fields = wma.fields_from_prompt(prompt)
        rows.append({"task_id": k, "step_idx": 1, "url": fields["url"], "objective": fields["objective"],
                     "previous_actions": ["None", fields["previous_action"]],
                     "current_action": fields["current_action"],
                     "observation": fields["observation"], "next_state_acctree": following})
    return rows


EXAMPLE0_NEW = [
    "[191] link 'Where is this?'",
    "[1448] heading 'Node: Carnegie Mellon Café (9234421950)'",
    "[1454] heading 'Version #1'",
    "[1491] StaticText '(no comment)'",
    "[1492] StaticText 'Edited '",
    "[1458] Abbr 'Mon, 08 Nov 2021 05:11:00 +0000'",
    "[1493] StaticText 'over 2 years ago'",
    "[1494] StaticText ' by anonymous'",
    "[1495] StaticText 'Changeset #'",
    "[1460] link '0'",
    "[1497] StaticText 'Location: '",
    "[1462] link '40.4424191, -79.9397388'",
    "[1465] heading 'Tags'",
    "[1466] table ''",
    "[1468] row ''",
    "[1469] rowheader 'amenity' required: False",
    "[1470] link 'amenity'",
    "[1471] cell 'restaurant'",
    "[1472] link 'restaurant'",
    "[1473] row ''",
    "[1474] rowheader 'name' required: False",
    "[1475] link 'name'",
    "[1476] cell 'Carnegie Mellon Café'",
    "[1478] link 'Download XML'",
    "[1507] StaticText ' · '",
    "[1479] link 'View History'",
    "[272] generic 'Zoom In Zoom Out Show My Location Layers Share 20 m 50 ft © OpenStreetMap contributors ♥ Make a Donation. Website and API terms'",
    "[1303] image ''",
    "[425] link 'Zoom In'",
    "[426] link 'Zoom Out'",
    "[427] button 'Show My Location'",
    "[291] link 'Layers'",
    "[333] link ''",
    "[344] link 'Share'",
    "[422] link ''",
    "[424] link ''",
    "[1439] StaticText '20 m'",
    "[1440] StaticText '50 ft'",
    "[488] StaticText '© '",
    "[459] link 'OpenStreetMap contributors'",
    "[490] StaticText ' ♥ '",
    "[460] link 'Make a Donation'",
    "[492] StaticText '. '",
    "[461] link 'Website and API terms'",
]
EXAMPLE0_DELETED = [
    "[642] StaticText 'restaurants near CMU'",
    "[682] heading 'Search Results'",
    "[685] heading 'Results from OpenStreetMap Nominatim'",
    "[686] link 'OpenStreetMap Nominatim'",
    "[731] StaticText 'Restaurant '",
    "[707] link 'Carnegie Mellon Café, 5125, Margaret Morrison Street, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
    "[709] link 'Rooted, 5125, Margaret Morrison Street, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
    "[711] link 'Tahini, Margaret Morrison Street, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
    "[737] StaticText 'Restaurant '",
    "[713] link 'Schatz Dining Room, 5032, Forbes Avenue, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
    "[715] link 'Taste of India, 5125, Margaret Morrison Street, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
    "[717] link 'Cucina, Margaret Morrison Street, Squirrel Hill North, Pittsburgh, Allegheny County, 15213, United States'",
]
EXAMPLE0_UPDATED = [
    "[64] RootWebArea 'Node: \\u202aCarnegie Mellon Café\\u202c (\\u202a9234421950\\u202c) | OpenStreetMap' focused: True",
    "[62] textbox 'Search' required: False",
    "[1452] button 'Close'",
]
EXAMPLE1_NEW = [
    '[4167] RootWebArea "Search results for: \'HP Inkjet Fax Machine\'" focused: True',
    '[5912] heading "Search results for: \'HP Inkjet Fax Machine\'"',
    "[4541] link 'View as \\ue60b List'",
    "[4182] StaticText '12'",
    "[4184] StaticText '11485'",
    "[5949] link '\\ue614 Set Ascending Direction'",
    "[5953] DescriptionList ''",
    "[5954] term ''",
    "[4191] StaticText 'Did you mean'",
    "[5955] definition ''",
    "[5956] link 'hp inspect fax machine'",
    "[5958] definition ''",
    "[5959] link 'hp inkjet fax machine'",
    "[5965] link 'Image'",
    "[5969] image 'Image'",
    "[5974] link 'HP CB782A#ABA 640 Inkjet Fax Machine (Renewed)'",
    "[4195] StaticText '$279.49'",
    "[5990] button 'Add to Cart'",
    "[5995] button 'Add to Wish List'",
    "[5998] button 'Add to Compare'",
    "[6005] link 'Image'",
    "[6008] image 'Image'",
    "[6013] link 'HP Officejet Pro L7780 Color All-in-One Printer/Fax/Scanner/Copier (C8192A#ABA)'",
    "[6015] LayoutTable ''",
    "[4205] StaticText 'Rating:'",
    "[6019] generic '60%'",
    "[6024] link '12 \\xa0Reviews'",
    "[4208] StaticText '$60.98'",
    "[6057] link 'Image'",
    "[6061] image 'Image'",
    "[6066] link 'HP CF484A LaserJet Pro MFP M225DN Multifunction Laser Printer, Copy/Fax/Print/Scan'",
    "[6068] LayoutTable ''",
    "[4218] StaticText 'Rating:'",
    "[6072] generic '75%'",
    "[6077] link '5 \\xa0Reviews'",
    "[4221] StaticText '$300.00'",
    "[6110] link 'Image'",
    "[6114] image 'Image'",
    "[6119] link 'BRTFAX2840 - Brother intelliFAX-2840 Laser Fax Machine'",
    "[4228] StaticText '$199.99'",
    "[6135] button 'Add to Cart'",
    "[6140] button 'Add to Wish List'",
    "[6143] button 'Add to Compare'",
    "[6587] definition ''",
    "[6590] link 'Beauty & Personal Care( 1070 item )'",
    "[6596] link 'Sports & Outdoors( 198 item )'",
    "[6602] link 'Clothing, Shoes & Jewelry( 6686 item )'",
    "[6608] link 'Home & Kitchen( 1985 item )'",
    "[6614] link 'Office Products( 239 item )'",
    "[6620] link 'Tools & Home Improvement( 54 item )'",
    "[6626] link 'Health & Household( 23 item )'",
    "[6632] link 'Patio, Lawn & Garden( 17 item )'",
    "[6638] link 'Electronics( 864 item )'",
    "[6644] link 'Cell Phones & Accessories( 67 item )'",
    "[6650] link 'Video Games( 44 item )'",
    "[6656] link 'Grocery & Gourmet Food( 238 item )'",
    "[6664] heading 'Compare Products'",
    "[4466] StaticText 'You have no items to compare.'",
    "[6687] heading 'My Wish List'",
]
EXAMPLE1_DELETED = [
    "[1] RootWebArea 'Health & Household' focused: True",
    "[174] link 'My Account'",
    "[172] link 'My Wish List'",
    "[176] link 'Sign In'",
    "[179] StaticText 'Welcome to One Stop Market'",
    "[180] link 'Create an Account'",
    "[102] link 'Skip to Content'",
    "[184] link '\ue611 My Cart'",
    "[1792] StaticText 'Search'",
    "[407] combobox '\ue615 Search' autocomplete: both hasPopup: listbox required: False expanded: False",
    "[1795] link 'Advanced Search'",
    "[410] button 'Search' disabled: True",
    "[17] tablist '' multiselectable: False orientation: horizontal",
    "[19] tabpanel ''",
    "[188] menu '' orientation: vertical",
    "[315] menuitem '\ue622 Beauty & Personal Care' hasPopup: menu",
    "[318] menuitem '\ue622 Sports & Outdoors' hasPopup: menu",
    "[321] menuitem '\ue622 Clothing, Shoes & Jewelry' hasPopup: menu",
    "[324] menuitem '\ue622 Home & Kitchen' hasPopup: menu",
    "[327] menuitem '\ue622 Office Products' hasPopup: menu",
    "[330] menuitem '\ue622 Tools & Home Improvement' hasPopup: menu",
    "[332] menuitem '\ue622 Health & Household' hasPopup: menu",
    "[334] menuitem '\ue622 Patio, Lawn & Garden' hasPopup: menu",
    "[337] menuitem '\ue622 Electronics' hasPopup: menu",
    "[140] link 'Home '",
    "[143] StaticText 'Health & Household'",
    "[144] heading 'Health & Household Items 1-12 of 537'",
    "[212] link 'View as \ue60b List'",
    "[203] StaticText '537'",
    "[222] link '\ue613 Set Descending Direction'",
    "[253] DescriptionListDetail ''",
    "[1986] link 'Household Supplies( 277 item )'",
    "[1987] link 'Health Care( 86 item )'",
    "[1988] link 'Diet & Sports Nutrition( 108 item )'",
]
EXAMPLE1_UPDATED = [
    "[5909] main ''",
    "[4340] StaticText 'View as'",
    "[5933] strong 'Grid'",
    "[4179] StaticText 'Items '",
    "[4181] StaticText '-'",
    "[4183] StaticText ' of '",
    "[4188] StaticText 'Sort By'",
    "[4494] combobox 'Sort By' hasPopup: menu expanded: False",
    "[4339] StaticText 'Shop By'",
    "[6583] heading 'Shopping Options'",
    "[6585] DescriptionList ''",
    "[6586] heading 'Category'",
]


EXPECTED = [
    {"new": EXAMPLE0_NEW, "deleted": EXAMPLE0_DELETED, "updated": EXAMPLE0_UPDATED},
    {"new": EXAMPLE1_NEW, "deleted": EXAMPLE1_DELETED, "updated": EXAMPLE1_UPDATED},
]


def gold_for_first_samples(solved_per_index, calls):
    """A stand-in for `rlvr_envs.integrations.hf.generate`: the gold answer for the first
    `solved_per_index(i)` samples of each prompt, an empty answer for the rest."""
    def generate(model, task, indices, **kwargs):
        calls.append(list(indices))
        seen: dict[int, int] = {}
        out = []
        for i in indices:
            seen[i] = seen.get(i, 0) + 1
            out.append(task.target_ids(i).tolist() if seen[i] <= solved_per_index(i) else [])
        return out
    return generate
