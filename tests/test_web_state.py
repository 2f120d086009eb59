"""Web-state prediction: answer parsing and F1, the WMA loader, MiniWeb, both env ids.

The WMA loader is exercised on the two real WebArena transitions in ../shared/data/wma,
written out here in the two column layouts the loader reads (WMA's and RLVR-World's).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr_envs.web import wma
from rlvr_envs.web.mini_web import MiniWebConfig, generate
from rlvr_envs.core.answer import AnswerError
from rlvr_envs.web.changes import ChangeList, _title, canonical_line, parse_changes, score_changes
from tests.samples import EXPECTED, real_records, shared_data_or_skip, write_jsonl


@functools.lru_cache(maxsize=1)
def web_tokenizer():
    """A small byte-level BPE trained here on MiniWeb text (exact round trip for any text)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = []
    for index in range(150):
        row = generate(MiniWebConfig(), 1000, index)
        texts += [row["observation"], row["next_state_acctree"], row["current_action"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<|endoftext|>", "<pad>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<pad>")


GOLD = ChangeList.from_sections({
    "new": ["[1273] StaticText 'Vortex Running Shoes'", "[1272] button 'Search'"],
    "updated": ["[1220] textbox '\\ue60c' focused: True required: False"]})


# -- reading answers ------------------------------------------------------------------------------

def test_gold_text_round_trips_and_scores_one():
    text = GOLD.text()
    assert text == ("New items:\n[1273] StaticText 'Vortex Running Shoes'\n[1272] button 'Search'\n\n"
                    "Deleted items:\nNone\n\nUpdated items:\n[1220] textbox '\\ue60c' focused: True required: False")
    assert parse_changes(text) == GOLD
    metrics = score_changes(parse_changes(text), GOLD)
    assert metrics["f1"] == metrics["precision"] == metrics["recall"] == metrics["reference_f1"] == 1.0
    assert metrics["deleted_f1"] == 1.0 and metrics["gold"] == 3  # items; the None is not one


@pytest.mark.parametrize("response", [
    "<think>The click opens results. New items: maybe a list?</think>\n" + GOLD.text(),
    "Let's think step by step. The page will show the product.\n\n" + GOLD.text() + "\n\nI hope this helps!",
    "Final answer:\n" + GOLD.text(),
    "```\n" + GOLD.text() + "\n```",
    "CURRENT ACTION: ```click [5]```\n" + GOLD.text(),
    GOLD.text().replace("New items:", "## New items:").replace("Deleted items:", "**Deleted items:**"),
    GOLD.text().replace("Deleted items:\nNone", "Deleted items: None").replace("New items:\n", "NEW ITEMS:\n\n"),
    GOLD.text().replace("\n[1272]", "\n\t\t[1272]").replace("'Search'", '"Search"'),
    "New items:\n[1] draft\n\nDeleted items:\n[2] draft\n\nthen, thinking again:\n" + GOLD.text(),
])
def test_answers_are_found_among_other_text(response):
    assert score_changes(parse_changes(response), GOLD)["f1"] == 1.0


@pytest.mark.parametrize("response", ["", "The page does not change.", "[12] link 'x'", "Items: none"])
def test_responses_without_sections_are_unparsable(response):
    with pytest.raises(AnswerError, match="no 'New items:'"):
        parse_changes(response)


def test_missing_sections_extra_lines_and_duplicates_score_by_the_rule():
    only_new = parse_changes("New items:\n[1273] StaticText 'Vortex Running Shoes'\n[1272] button 'Search'")
    assert only_new.deleted == () and only_new.updated == ()
    m = score_changes(only_new, GOLD)
    assert (m["precision"], m["recall"]) == (1.0, 2 / 3) and m["f1"] == pytest.approx(0.8)
    assert m["new_f1"] == 1.0 and m["updated_recall"] == 0.0
    assert m["deleted_f1"] == 1.0  # no deleted item predicted, none gold: the section agrees
    assert m["reference_f1"] == pytest.approx(2 / 3)  # RLVR-World's rule: the None line is missed
    # prose glued to a section is read as a (wrong) item
    glued = parse_changes(GOLD.text() + "\nThat is all.")
    assert glued.updated[-1] == "That is all." and score_changes(glued, GOLD)["precision"] == 0.75
    # a repeated right line is one more prediction (multiset), not a free pass (set)
    line = "[1272] button 'Search'"
    doubled = parse_changes(GOLD.text().replace(line, line + "\n" + line))
    m = score_changes(doubled, GOLD)
    assert (m["matches"], m["predicted"], m["recall"], m["precision"]) == (3, 4, 1.0, 0.75)
    # "None" only says a section is empty: all None predicts no item at all
    m = score_changes(parse_changes("New items:\nNone\n\nDeleted items:\nNone\n\nUpdated items:\nNone"), GOLD)
    assert (m["f1"], m["matches"], m["predicted"], m["deleted_f1"], m["new_f1"]) == (0.0, 0, 0, 1.0, 0.0)
    assert m["reference_f1"] == pytest.approx(2 / 7)  # under RLVR-World's rule the None line matches
    # an empty section predicts nothing
    assert score_changes(parse_changes("New items:\n\nDeleted items:\n\nUpdated items:\n"), GOLD)["f1"] == 0.0


def test_unchanged_pages_score_one_exactly_when_no_item_is_predicted():
    unchanged = ChangeList.from_sections({})
    assert unchanged.text() == "New items:\nNone\n\nDeleted items:\nNone\n\nUpdated items:\nNone"
    for text in (unchanged.text(), "New items: none\nDeleted items: NONE\nUpdated items: None",
                 "New items:\n\nDeleted items:", "<think>nothing happens</think>Updated items:\nNone"):
        m = score_changes(parse_changes(text), unchanged)
        assert m["f1"] == m["precision"] == m["recall"] == 1.0, text
    m = score_changes(parse_changes(unchanged.text().replace("Updated items:\nNone", "Updated items:\n[5] link 'x'")),
                      unchanged)
    assert (m["f1"], m["updated_f1"], m["new_f1"]) == (0.0, 0.0, 1.0)


_REF_TITLE = re.compile(r"^\s*(?:#+\s*)?(?:\*\*)?\s*(new|deleted|updated)\s+items\s*(?:\*\*)?\s*:\s*(?:\*\*)?(.*)$",
                        re.IGNORECASE)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from([" ", "\t", "\n", "#", "*", "**", "new", "NEW", "Deleted", "updated", "items",
                                 "ITEMS", ":", "x", "\u017f", "\u3000", " items:", "new items"]), max_size=10).map("".join))
def test_title_scan_equals_the_former_regular_expression(line):
    """The linear title scan accepts what the former (backtracking) expression accepted."""
    match = _REF_TITLE.match(line)
    assert _title(line) == ((match.group(1).lower(), match.group(2)) if match else None)


def test_canonical_line_only_normalises_items():
    assert canonical_line("\t [5]  link   \"a\"  ") == "[5] link 'a'"
    assert canonical_line("  None ") == canonical_line("none") == canonical_line("NONE") == "None"
    assert canonical_line("[oops") == "[oops" and canonical_line(" Nothing ") == "Nothing"


_lines = st.sampled_from(["None", "[1] link 'a'", "[2] button 'b'", "[3] StaticText 'c'", "x"])
_change_lists = st.builds(ChangeList, *[st.lists(_lines, max_size=4).map(tuple)] * 3)


@settings(max_examples=300, deadline=None)
@given(_change_lists, _change_lists)
def test_f1_properties(predicted, gold):
    forward, backward = score_changes(predicted, gold), score_changes(gold, predicted)
    assert 0.0 <= forward["f1"] <= 1.0
    assert forward["f1"] == pytest.approx(backward["f1"])
    assert forward["precision"] == pytest.approx(backward["recall"])
    for section in ("new", "deleted", "updated"):
        assert forward[f"{section}_f1"] == pytest.approx(backward[f"{section}_f1"])
    def items(change_list, s):
        return Counter(line for line in change_list.section(s) if line != "None")

    same = all(items(predicted, s) == items(gold, s) for s in ("new", "deleted", "updated"))
    assert (forward["f1"] == 1.0) == same
    assert 0.0 <= forward["reference_f1"] <= 1.0
    assert forward["reference_f1"] == pytest.approx(backward["reference_f1"])


@settings(max_examples=100, deadline=None)
@given(_change_lists.filter(lambda c: any(c.section(s) for s in ("new", "deleted", "updated"))))
def test_written_answers_parse_back(change_list):
    text = "\n\n".join(title + "\n" + "\n".join(change_list.section(s)) for s, title in
                       (("new", "New items:"), ("deleted", "Deleted items:"), ("updated", "Updated items:")))
    assert score_changes(parse_changes(text), change_list)["f1"] == 1.0


# -- WMA files ------------------------------------------------------------------------------------

def test_fields_are_read_from_the_real_prompts():
    rows = real_records()
    assert rows[0]["url"] == ("http://openstreetmap.org:3000/search?query=restaurant%20near%20CMU"
                              "#map=19/40.44242/-79.93974")
    assert rows[0]["objective"] == "What are the latitude and longitude of a restaurant near CMU?"
    assert rows[0]["previous_actions"][-1].startswith("type [12] [restaurant near CMU] [1] where [12] is textbox")
    assert rows[0]["current_action"] == "click [707] where [707] is button for first listed restaurant"
    assert rows[0]["observation"].startswith("[64] RootWebArea 'restaurants near CMU | OpenStreetMap'")
    assert rows[1]["observation"].startswith("Tab 0 (current): Health & Household\n[1] RootWebArea")
    assert rows[1]["current_action"] == 'type[407] ["HP Inkjet Fax Machine"] [1]'
    assert rows[0]["observation"].endswith("15213, United States'")


@pytest.fixture()
def wma_dir(tmp_path):
    """A data root with the real transitions in WMA's layout (one JSONL file)."""
    write_jsonl(tmp_path / "wma" / "records.jsonl", real_records())
    return tmp_path


@pytest.fixture()
def rlvr_dir(tmp_path):
    """A data root in RLVR-World's layout: train/test parquet with the filled-in prompt, the
    next tree and WMA's change lists, but no observation/url/action columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rlvr_envs.web.task import prompt_template

    template = prompt_template(str(shared_data_or_skip("wma", "rlvr_world_model_prompt.json")))
    rows = []
    for row, expected in zip(real_records(), EXPECTED):
        # the field as WMA's scripts fill it: str.format prints the previous_actions list
        question = template.format(previous_action=row["previous_actions"], **row)
        rows.append({"task_id": row["task_id"], "step_idx": row["step_idx"],
                     "previous_actions": row["previous_actions"],
                     "next_state_acctree": row["next_state_acctree"], "question": question,
                     "new_items": "\n".join(expected["new"]) or "None", "deleted_items": "None",
                     "updated_items": "\n".join(expected["updated"]) or "None"})
    (tmp_path / "wma").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "wma" / "train.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), tmp_path / "wma" / "test.parquet")
    return tmp_path


def test_loader_reads_wma_layout(wma_dir):
    records = wma.load_records(wma_dir)
    rows = real_records()
    assert [r.uid for r in records] == ["wma/0/1", "wma/1/1"]
    for record, row in zip(records, rows):
        assert (record.url, record.objective, record.current_action) == (row["url"], row["objective"],
                                                                         row["current_action"])
        assert record.observation == row["observation"] and record.next_state_acctree == row["next_state_acctree"]
        # the whole list, printed as WMA's prompts show it
        assert record.previous_action == str(row["previous_actions"]) == wma.format_previous_actions(
            row["previous_actions"])
        assert record.dataset_sections is None and record.split in ("train", "test")
    assert records[0].previous_action.startswith("['None', \"type [12] [restaurant near CMU] [1] where [12] is")


def test_loader_reads_rlvr_world_layout_and_its_split(rlvr_dir):
    train, test = wma.load_records(rlvr_dir, "train"), wma.load_records(rlvr_dir, "test")
    assert [r.uid for r in train] == ["wma/0/1"] and [r.uid for r in test] == ["wma/1/1"]
    rows = real_records()
    for record, row in zip(train + test, rows):
        assert record.observation == row["observation"]
        assert (record.url, record.objective, record.current_action) == (row["url"], row["objective"],
                                                                         row["current_action"])
        assert record.previous_actions == tuple(row["previous_actions"])
        assert record.previous_action == str(row["previous_actions"])
    assert test[0].dataset_sections["deleted"] == ["None"]


def test_rlvr_world_template_reproduces_their_prompt(rlvr_dir, tmp_path):
    """prompt=<RLVR-World's template file> gives back the dataset's own prompt, character for
    character: for the list form of WMA's previous actions (rlvr_dir) and for the real
    examples' prompts, whose previous action is one action string."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(shared_data_or_skip("wma", "rlvr_world_model_prompt.json"))
    task = build("WebStateTask", data_dir=str(rlvr_dir), split="all", prompt=path)
    questions = [row["question"] for name in ("test.parquet", "train.parquet")  # file order
                 for row in pq.read_table(rlvr_dir / "wma" / name).to_pylist()]
    assert [task.prompt_text(i) for i in range(len(task))] == questions
    assert "PREVIOUS ACTION: ['None', \"type [12]" in task.prompt_text(1)

    template = json.loads(open(path, encoding="utf-8").read())["template"]
    examples = json.loads(shared_data_or_skip("wma", "text_only_acctree_format.json").read_text())["examples"]
    rows = []
    for k, (prompt, _) in enumerate(examples):
        fields = wma.fields_from_prompt(prompt)
        rows.append({"task_id": k, "step_idx": 1, "question": template.format(**fields),
                     "next_state_acctree": real_records()[k]["next_state_acctree"]})
    (tmp_path / "real" / "wma").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "real" / "wma" / "real.parquet")
    task = build("WebStateTask", data_dir=str(tmp_path / "real"), split="all", prompt=path)
    assert [task.prompt_text(i) for i in range(len(task))] == [row["question"] for row in rows]
    assert "PREVIOUS ACTION: type [12] [restaurant near CMU] [1] where [12] is textbox" in task.prompt_text(0)
    assert task.transition(0).meta["previous_action"].startswith("type [12]")


def test_content_hash_split_is_deterministic_and_about_one_percent(tmp_path):
    rows = [{k: v for k, v in generate(MiniWebConfig(), 3, i).items() if k != "site"} for i in range(600)]
    write_jsonl(tmp_path / "wma" / "part-a.jsonl", rows[:300])
    write_jsonl(tmp_path / "wma" / "part-b.jsonl", rows[300:])
    first = [r.split for r in wma.load_records(tmp_path)]
    assert first == [r.split for r in wma.load_records(tmp_path)]
    assert 1 <= first.count("test") <= 20
    # identical transitions land on the same side wherever they are
    write_jsonl(tmp_path / "wma" / "part-b.jsonl", rows[300:][::-1])
    by_content = {(r.observation, r.current_action): r.split for r in wma.load_records(tmp_path)}
    assert sorted(by_content.values()) == sorted(first)


def test_corrupt_rows_are_named_by_file_and_row(tmp_path):
    good = real_records()[0]
    path = tmp_path / "wma" / "bad.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(good) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: the JSON line is not valid JSON"):
        wma.load_records(tmp_path)
    path.write_text(json.dumps(good) + "\n" + json.dumps({"url": "x", "next_state_acctree": "[1] a 'b'"}) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2: missing column\(s\) \['observation', 'current_action'\]"):
        wma.load_records(tmp_path)
    with pytest.warns(UserWarning, match=r"skipped 1 corrupt WMA row\(s\); first: .*bad\.jsonl:2"):
        assert len(wma.load_records(tmp_path, on_corrupt="skip")) == 1
    path.unlink()
    (tmp_path / "wma" / "list.json").write_text(json.dumps({"data": [good, {**good, "observation": 5}]}))
    with pytest.raises(ValueError, match=r"list\.json row 1: column 'observation' should be text"):
        wma.load_records(tmp_path, on_corrupt="raise")


def test_missing_data_says_what_to_get(tmp_path):
    with pytest.raises(FileNotFoundError, match="rlvr-world data wma"):
        wma.data_files(tmp_path)
    from rlvr_envs.registration import entry

    available, hint = entry("RLVRWorld/WebState-v0").availability(data_dir=str(tmp_path))
    assert not available and "rlvr-world data wma" in hint
    assert entry("RLVRWorld/MiniWeb-v0").availability() == (True, "embedded")


def test_download_command(tmp_path, monkeypatch, rlvr_dir, capsys):
    from rlvr_envs import cli

    assert cli.main(["data", "wma", "--data-dir", str(tmp_path / "offline")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlvr-world: error: HF_HUB_OFFLINE is set") and err.count("\n") == 1

    import shutil

    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, repo_type, revision, local_dir, allow_patterns):  # the hub, offline
        calls.append((repo_id, repo_type))
        shutil.copytree(rlvr_dir / "wma", local_dir, dirs_exist_ok=True)

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    assert cli.main(["data", "wma", "--data-dir", str(tmp_path / "online")]) == 0
    out = capsys.readouterr().out
    assert calls == [(wma.DEFAULT_REPO, "dataset")]
    assert "train            1" in out and "test             1" in out and "OK:" in out
    assert "2 records carry WMA's own change lists" in out


# -- tasks and envs ---------------------------------------------------------------------------------

def build(task, **kwargs):
    from rlvr_envs.core.factory import build_task

    return build_task(f"rlvr_envs.web.task:{task}", tokenizer=web_tokenizer(), **kwargs)


def respond(task, index, text):
    return task.verify([index], [task.tokenizer(text, add_special_tokens=False)["input_ids"]])[0]


def test_webstate_gold_is_the_extraction_and_scores_one(wma_dir):
    task = build("WebStateTask", data_dir=str(wma_dir), split="all", max_total_len=None)
    assert len(task) == 2
    for index in range(2):
        transition = task.transition(index)
        assert transition.target.as_dict() == {s: EXPECTED[index][s] or ["None"] for s in EXPECTED[index]}
        gold = task.verify([index], [task.target_ids(index)])[0]
        assert gold.parsed and gold.reward == 1.0 == task.max_reward(index)
        prompt = task.prompt_text(index)
        assert prompt.startswith("You predict the next state of a web page")
        assert transition.state in prompt and f"CURRENT ACTION: {transition.action}\n" in prompt
        assert wma.fields_from_prompt(prompt)["observation"] == transition.state


def test_webstate_dataset_targets_and_length_filter(rlvr_dir):
    task = build("WebStateTask", data_dir=str(rlvr_dir), split="test", target="dataset", prompt="compact",
                 max_total_len=None)
    assert task.target_text(0).split("\n\nDeleted items:\nNone\n\n")[0] == "New items:\n" + "\n".join(
        EXPECTED[1]["new"])
    both = build("WebStateTask", data_dir=str(rlvr_dir), split="all", prompt="compact", max_total_len=None)
    totals = sorted(len(both.prompt_ids(i)) + len(both.target_ids(i)) for i in range(2))
    assert totals[0] < totals[1]
    with pytest.warns(UserWarning, match=rf"max_total_len={totals[0]} dropped 1 of 2 transitions"):
        kept = build("WebStateTask", data_dir=str(rlvr_dir), split="all", prompt="compact", max_total_len=totals[0])
    assert (len(kept), kept.n_filtered) == (1, 1)
    assert len(kept.prompt_ids(0)) + len(kept.target_ids(0)) == totals[0]
    with pytest.raises(ValueError, match="no transition fits .*max_total_len=10"):
        build("WebStateTask", data_dir=str(rlvr_dir), split="test", max_total_len=10, prompt="compact")
    with pytest.raises(ValueError, match="target must be one of"):
        build("WebStateTask", data_dir=str(rlvr_dir), target="model")


def test_partial_and_malformed_responses(wma_dir):
    task = build("WebStateTask", data_dir=str(wma_dir), split="all", max_total_len=None)
    gold = task.transition(1).target
    half = ChangeList(gold.new[: len(gold.new) // 2], gold.deleted, ())
    result = respond(task, 1, "<think>search results</think>" + half.text())
    assert result.parsed and 0.0 < result.reward < 1.0
    assert result.metrics["deleted_f1"] == 1.0 and result.metrics["updated_recall"] == 0.0
    for garbage in ("The page will show search results.", ""):
        bad = respond(task, 1, garbage)
        assert (bad.reward, bad.parsed) == (0.0, False) and "no 'New items:'" in bad.error
        assert bad.metrics["f1"] == 0.0
    weird = task.verify([0, 1], [[task.vocab_size + 5], np.arange(300) % task.vocab_size])
    assert [r.reward for r in weird] == [0.0, 0.0] and weird[0].error


def test_miniweb_is_pure_and_splits_do_not_share_streams():
    config = MiniWebConfig()
    assert generate(config, 7, 3) == generate(config, 7, 3)
    assert generate(config, 7, 3) != generate(config, 7, 4)
    a, b = build("MiniWebTask", size=12, seed=4), build("MiniWebTask", size=12, seed=4, split="train")
    assert [t.uid for t in (a.transition(0), b.transition(0))] == ["miniweb/test/4/0", "miniweb/train/4/0"]
    assert a.transition(0).state != b.transition(0).state
    again = build("MiniWebTask", size=12, seed=4, list_items=3)
    assert all(np.array_equal(a.prompt_ids(i), again.prompt_ids(i)) for i in range(12))
    with pytest.raises(ValueError, match="sites must be"):
        build("MiniWebTask", sites=("bank",))


def test_miniweb_covers_the_web_actions_and_every_gold_scores_one():
    task = build("MiniWebTask", size=200, seed=0)
    verbs = Counter(task.transition(i).action.split(" ")[0] for i in range(len(task)))
    assert {"click", "type", "hover", "scroll"} <= set(verbs)
    kinds = Counter()
    for i in range(len(task)):
        gold = task.transition(i).target
        kinds.update(s for s in ("new", "deleted", "updated") if gold.section(s) != ("None",))
        kinds["unchanged"] += not task.transition(i).changed
    assert all(kinds[k] > 5 for k in ("new", "deleted", "updated", "unchanged"))
    results = task.verify(list(range(len(task))), [task.target_ids(i) for i in range(len(task))])
    assert all(r.parsed and r.reward == 1.0 for r in results)
    assert task.max_response_len < 600 and task.max_prompt_len < 1000


@pytest.mark.parametrize("env_id", ["RLVRWorld/MiniWeb-v0", "RLVRWorld/WebState-v0"])
def test_gym_make_gold_is_max_and_garbage_is_zero(env_id, wma_dir):
    import rlvr_envs  # noqa: F401  (registers the ids)

    kwargs = {"size": 8} if "MiniWeb" in env_id else {"data_dir": str(wma_dir), "split": "all",
                                                       "max_total_len": None}
    env = gym.make(env_id, tokenizer=web_tokenizer(), **kwargs)
    task = env.unwrapped.task
    for index in range(2):
        env.reset(seed=0, options={"index": index})
        _, reward, terminated, _, info = env.step(task.target_ids(index))
        assert terminated and reward == info["max_reward"] == 1.0 and info["parsed"]
        env.reset(options={"index": index})
        garbage = task.tokenizer("Nothing changes here.", add_special_tokens=False)["input_ids"]
        _, reward, terminated, _, info = env.step(np.asarray(garbage))
        assert terminated and reward == 0.0 and not info["parsed"] and info["error"]
    token_env = gym.make(env_id, tokenizer=web_tokenizer(), mode="token", **kwargs)
    token_env.reset(options={"index": 1})
    for token in task.target_ids(1):
        _, reward, terminated, _, _ = token_env.step(int(token))
        assert not terminated and reward == 0.0
    _, reward, terminated, _, info = token_env.step(task.eos_token_id)
    assert terminated and reward == 1.0
    env.close()
    token_env.close()


def test_prompt_templates_built_in_and_from_rlvr_worlds_file(tmp_path):
    import gymnasium as gym

    from rlvr_envs.web.task import COMPACT_PROMPT, FULL_PROMPT, TASK_BLOCK, prompt_template

    assert FULL_PROMPT.count(TASK_BLOCK) == 1 and COMPACT_PROMPT.endswith(TASK_BLOCK)
    path = shared_data_or_skip("wma", "rlvr_world_model_prompt.json")
    reference = json.loads(path.read_text(encoding="utf-8"))["template"]
    assert prompt_template(str(path)) == reference
    env = gym.make("RLVRWorld/MiniWeb-v0", size=8, prompt=str(path))
    task = env.unwrapped.task
    text = task.prompt_text(0)
    assert text.startswith(reference[:40]) and task.transition(0).action in text
    # every filled-in prompt reads back through the WMA loader's field parser
    for template in (reference, FULL_PROMPT, COMPACT_PROMPT):
        meta = {"url": "http://x/y", "objective": "buy", "previous_action": "None",
                "observation": "[1] RootWebArea 'Home'", "current_action": "click [1]"}
        assert wma.fields_from_prompt(template.format(**meta)) == meta
    bad = tmp_path / "bad.txt"
    bad.write_text("no placeholders here")
    with pytest.raises(ValueError, match="placeholder"):
        gym.make("RLVRWorld/MiniWeb-v0", size=8, prompt=str(bad))
    with pytest.raises(ValueError, match="template file"):
        gym.make("RLVRWorld/MiniWeb-v0", size=8, prompt="fancy")


def test_embedded_web_tokenizer_is_the_miniweb_default():
    from rlvr_envs.core.factory import build_task

    task = build_task("rlvr_envs.web.task:MiniWebTask", size=64)
    assert task.tokenizer.name_or_path.endswith("miniweb") and task.vocab_size == 1024
    assert task.max_prompt_len < 600 and task.max_response_len < 600
    text = task.target_text(3) + "\n[9] StaticText '\\ue60b Café ♥ 日本'"
    assert task.tokenizer.decode(task.tokenizer(text, add_special_tokens=False)["input_ids"]) == text
    results = task.verify(list(range(len(task))), [task.target_ids(i) for i in range(len(task))])
    assert all(r.reward == 1.0 for r in results)


def test_repeated_wma_ids_get_unique_uids(tmp_path):
    """WMA's task_id/step_idx repeat across agent runs; every transition keeps its own uid."""
    write_jsonl(tmp_path / "wma" / "runs.jsonl", real_records() * 2)
    assert [r.uid for r in wma.load_records(tmp_path)] == ["wma/0/1", "wma/1/1", "wma/0/1#1", "wma/1/1#1"]
