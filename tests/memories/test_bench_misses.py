"""`bench_misses`: LoCoMo's missed evidence turns sorted by what they hold of the reference answer."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from apps.memories.benchmarks import locomo, misses

PETS = [
    {
        "sample_id": "pets",
        "conversation": {
            "speaker_a": "Nate",
            "speaker_b": "Jo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Nate", "dia_id": "D1:1", "text": "My dog Max chased the turtles again"},
                {"speaker": "Jo", "dia_id": "D1:2", "text": "Ha! How is Max doing?"},
                {"speaker": "Nate", "dia_id": "D1:3", "text": "I got a third turtle, the tank is full"},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Nate", "dia_id": "D2:1", "text": "Walked Max and fed my turtles"},
                {"speaker": "Nate", "dia_id": "D2:2", "text": "Adopted a parrot called Kiwi today"},
                {"speaker": "Jo", "dia_id": "D2:3", "text": "I finished my novel, finally"},
            ],
        },
        "qa": [
            {
                "question": "What pets does Nate have?",
                "answer": "a dog, turtles and a parrot",
                "evidence": ["D1:1", "D2:1", "D2:2"],
                "category": 1,
            },
            {
                "question": "Why did Nate's tank fill up?",
                "answer": "He got a third one",
                "evidence": ["D1:3", "D2:3"],
                "category": 3,
            },
        ],
    }
]


def test_a_missed_turn_is_covered_real_or_inferential_by_the_answer_words_it_holds():
    dataset = locomo.load(PETS)
    pets, tank = dataset.questions
    assert misses.answer_words(pets) == {"dog", "turtle", "parrot"}  # the question's "pets" is not an answer word
    lines = [
        # D2:1 (Max, turtles) is missed, but D1:1 in the top holds its answer words; D2:2 (the parrot) is not
        {"conversation": "pets", "question": pets.text, "ranked": ["D1:1", "D1:2~media", "D1:2"]},
        # D2:3 holds no answer word; D1:3 ("third") is found
        {"conversation": "pets", "question": tank.text, "ranked": ["D1:3"]},
    ]
    rows = misses.table(dataset, lines, k=2, draws=3)
    assert list(rows) == ["multi-hop", "open-domain", "overall"]
    hop = rows["multi-hop"]
    assert hop.found == {"missed": 2, "covered": 1, "real": 1, "inferential": 0}
    assert hop.recall == pytest.approx(1 / 3) and hop.recall_covered == pytest.approx(2 / 3)
    assert rows["open-domain"].found == {"missed": 1, "covered": 0, "real": 0, "inferential": 1}
    assert rows["overall"].questions == 2 and rows["overall"].found["missed"] == 3
    assert sum(rows["overall"].chance[key] for key in misses.VERDICTS) == pytest.approx(
        rows["overall"].chance["missed"]
    )


def test_the_command_prints_each_phase_and_refuses_a_file_of_another_set(tmp_path):
    data, details = tmp_path / "locomo.json", tmp_path / "details.json"
    data.write_text(json.dumps(PETS))
    question = PETS[0]["qa"][0]["question"]
    line = {"conversation": "pets", "question": question, "ranked": ["D1:1", "D2:2", "D2:1"]}
    details.write_text(json.dumps({"LoCoMo session": {"fresh": [line], "settled": [line]}}))
    out = io.StringIO()
    call_command("bench_misses", details=str(details), path=str(data), phase="settled", stdout=out)
    text = out.getvalue()
    assert "settled" in text and "fresh" not in text.split("\n\n")[1]
    assert "multi-hop" in text and "1.000" in text  # all three evidence turns in the top 10

    details.write_text(json.dumps({"BEAM session": {"fresh": [line]}}))
    with pytest.raises(CommandError, match="holds no LoCoMo run"):
        call_command("bench_misses", details=str(details), path=str(data), stdout=io.StringIO())
    line = {"conversation": "pets", "question": "What did Jo write?", "ranked": []}
    details.write_text(json.dumps({"LoCoMo session": {"fresh": [line]}}))
    with pytest.raises(CommandError, match="does not hold"):
        call_command("bench_misses", details=str(details), path=str(data), stdout=io.StringIO())
