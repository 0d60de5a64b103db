"""A held-out set of real chats (REALTALK's layout) is read as one Dataset: each message at its own time."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from apps.memories.benchmarks import chats
from tests.chat_sets import CHAT


def _write(path, data):
    path.write_text(json.dumps(data))
    return path


def test_each_message_keeps_its_own_time_and_a_message_without_one_takes_its_sessions(tmp_path):
    dataset = chats.load(_write(tmp_path / "Chat_1_Emi_Elise.json", CHAT))
    (chat,) = dataset.conversations
    assert chat.id == "Chat_1_Emi_Elise"
    assert chat.display_name == "Emi & Elise"
    times = {turn.id: turn.occurred_at for turn in chat.turns}
    assert times["D1:1"] == datetime(2023, 12, 29, 14, 5, 9, tzinfo=UTC)  # day first, its own
    assert times["D1:2"] == datetime(2023, 12, 29, 14, 0, tzinfo=UTC)  # none of its own: the session's
    assert times["D2:2"] == datetime(2024, 1, 2, 11, 0, tzinfo=UTC)
    spread = {turn.id: turn.occurred_at for turn in chats.load(tmp_path, stamping="spread").conversations[0].turns}
    assert spread["D1:1"] == times["D1:1"]  # a time of its own is kept whatever the stamping
    assert spread["D1:2"] == datetime(2023, 12, 29, 14, 0, 30, tzinfo=UTC)  # the second of its session


def test_text_is_the_cleaned_one_a_photo_its_caption_and_an_empty_message_is_not_a_turn(tmp_path):
    turns = {turn.id: turn for turn in chats.load(_write(tmp_path / "c.json", CHAT)).conversations[0].turns}
    assert list(turns) == ["D1:1", "D1:2", "D2:1", "D2:2"]  # D1:3 says nothing
    assert turns["D2:1"].text == "knitting a hat next"
    assert turns["D1:2"].text == "[shares a photo: a photo of a red scarf]"
    assert turns["D1:2"].shares_media and not turns["D1:1"].shares_media
    assert [turn.session for turn in turns.values()] == [1, 1, 2, 2]


def test_questions_carry_their_category_names_and_split_evidence(tmp_path):
    dataset = chats.load(_write(tmp_path / "c.json", CHAT))
    assert [(q.category, q.evidence) for q in dataset.questions] == [
        ("multi-hop", ("D1:1", "D2:1")),
        ("temporal", ("D1:1",)),
        ("commonsense", ("D2:1",)),
        ("visual", ("D1:2",)),  # a category the layout does not number is reported as given
    ]
    assert dataset.categories == ("multi-hop", "temporal", "commonsense", "visual") == dataset.headline
    assert dataset.metric == "R" and dataset.splits == {}  # held out: nothing tuned on it, all of it reported


def test_a_folder_is_a_chat_per_file_and_a_list_file_a_chat_per_item(tmp_path):
    _write(tmp_path / "Chat_2_B.json", CHAT)
    _write(tmp_path / "Chat_1_A.json", CHAT | {"conversation": {}})  # an empty wrapper is not LoCoMo's layout
    assert [c.id for c in chats.load(tmp_path).conversations] == ["Chat_1_A", "Chat_2_B"]
    listed = _write(tmp_path / "all.txt", [CHAT, CHAT | {"sample_id": "x"}])
    assert [c.id for c in chats.load(listed).conversations] == ["all-1", "x"]


def test_sessions_under_a_conversation_key_as_in_locomo_are_read_too(tmp_path):
    locomo_like = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"dia_id": "D1:1", "speaker": "Ana", "text": "hello"}],
        },
        "qa": [{"question": "Who said hello?", "evidence": ["D1:1"], "category": 2}],
    }
    dataset = chats.load(_write(tmp_path / "l.json", locomo_like))
    assert dataset.conversations[0].display_name == "Ana & Ben"
    assert dataset.conversations[0].turns[0].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": {}, "qa": []}, "no session_<n> lists"),
        ({"session_1": [{"dia_id": "D1:1", "speaker": "A", "clean_text": "hi"}]}, "has no date_time"),
        ({"session_1": [{"speaker": "A", "clean_text": "hi", "date_time": "01.01.2024, 10:00:00"}]}, "no dia_id"),
        ({"session_1": [{"dia_id": "D1:1", "speaker": "A", "clean_text": "hi", "date_time": "soon"}]}, "unknown"),
        (CHAT | {"qa": [{"evidence": ["D1:1"], "category": 1}]}, "has no question"),
        (7, "one chat object or a list"),
    ],
)
def test_a_file_in_another_layout_is_refused_with_what_is_wrong(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        chats.load(_write(tmp_path / "bad.json", data))


def test_two_chats_of_one_name_and_a_folder_without_chats_are_refused(tmp_path):
    with pytest.raises(chats.ChatFileError, match="two chats are called"):
        chats.load(_write(tmp_path / "dup.json", [CHAT | {"sample_id": "a"}, CHAT | {"sample_id": "a"}]))
    (tmp_path / "empty").mkdir()
    with pytest.raises(chats.ChatFileError, match=r"no \*\.json chat files"):
        chats.load(tmp_path / "empty")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(chats.ChatFileError, match="not JSON"):
        chats.load(tmp_path / "broken.json")
