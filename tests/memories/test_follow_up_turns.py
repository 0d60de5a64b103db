"""The reply to a relevant turn shares some of its relevance (retrieval/signals/follow_up.py): "How does Jon feel
about the opening night?" is answered by "Thanks! I'm excited…", two turns after the one that names the night,
and the turns of other days that name an opening or a night are closer to the question in words and meaning."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.memories.retrieval.signals import follow_up
from tests.memories.test_retrieval_failure_classes import DAY, _ingest, _search

pytestmark = pytest.mark.django_db

ANSWER = "jon:S1:3"
STUDIO = [
    (
        DAY,
        [
            ("Jon", "The official opening night of my dance studio is tomorrow, I am working hard to get it right."),
            ("Gina", "Good luck with it! How are you holding up?"),
            ("Jon", "Thanks! I'm excited and a bit nervous, it has been a wild ride but I'm ready to give it my best."),
            ("Gina", "You will be great, I know it."),
        ],
    ),
    (
        DAY + timedelta(days=4),
        [
            ("Gina", "The opening night of the new theatre downtown was packed."),
            ("Jon", "I heard it sold out, sorry I missed it."),
            ("Gina", "My store had a late night opening for the holiday sale last week."),
            ("Jon", "The dance classes for kids start in May."),
        ],
    ),
    (
        DAY + timedelta(days=9),
        [
            ("Jon", "Do you like dance shows?"),
            ("Gina", "I feel they are fun, the opening act is always the best part."),
            ("Jon", "The studio floor needs new mats before the next show."),
            ("Gina", "Order them early, shipping takes a week."),
        ],
    ),
]
QUESTION = "How does Jon feel about the opening night of his dance studio?"


def _answer(body: dict) -> tuple[int, dict] | None:
    for position, row in enumerate(body["results"]):
        if row["memory_type"] == "episode" and ANSWER in row["sources"]:
            return position, row
    return None


def test_the_reply_rises_towards_the_turn_it_answers(api, monkeypatch):
    _ingest(api, "jon", STUDIO)
    monkeypatch.setattr(follow_up, "FOLLOW_UP_SHARE", 0.0)
    before = _answer(_search(api, "jon", QUESTION))
    monkeypatch.undo()
    body = _search(api, "jon", QUESTION)
    after = _answer(body)
    assert before is not None and after is not None
    assert after[0] < before[0]  # it passes a turn of another day that names the studio
    assert before[1]["explain"]["follow_up"] == 0.0
    # the turn it answers, two back, names the night and ranks first; the reply gains 0.15 of the difference
    first = body["results"][0]
    assert "jon:S1:1" in first["sources"]
    gained = after[1]["explain"]["follow_up"]
    assert gained == pytest.approx(follow_up.FOLLOW_UP_SHARE * (first["score"] - before[1]["score"]), abs=1e-3)
    assert after[1]["score"] == pytest.approx(before[1]["score"] + gained, abs=1e-3)
    assert after[1]["score"] < first["score"]  # never above the turn it answers


def test_the_first_turn_and_a_list_question_gain_nothing(api):
    _ingest(api, "jon", STUDIO)
    body = _search(api, "jon", QUESTION)
    assert next(row for row in body["results"] if "jon:S1:1" in row["sources"])["explain"]["follow_up"] == 0.0
    listing = _search(api, "jon", "What are all the things Jon said about his dance studio?")
    assert listing["diversified"] is True
    assert all(row["explain"]["follow_up"] == 0.0 for row in listing["results"])


def test_the_cross_encoders_order_stands_alone(api, settings, monkeypatch):
    """With the optional reranker, the head is re-scored by the cross-encoder alone: the gain, a share of the
    blended scores' gaps, is dropped from the score and from the explanation."""
    from apps.memories.retrieval import rerank
    from tests.memories.test_retrieval import _LongerIsBetterCrossEncoder

    _ingest(api, "jon", STUDIO)
    assert any(row["explain"]["follow_up"] > 0 for row in _search(api, "jon", QUESTION)["results"])
    monkeypatch.setattr(rerank, "_cross_encoder", _LongerIsBetterCrossEncoder)
    monkeypatch.setattr(rerank, "RERANK_TOP", 50)
    settings.ENGRAM = {**settings.ENGRAM, "RERANKER_ENABLED": True}
    assert all(row["explain"]["follow_up"] == 0.0 for row in _search(api, "jon", QUESTION)["results"])
