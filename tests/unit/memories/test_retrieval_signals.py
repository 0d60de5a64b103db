"""The query-conditional retrieval signals (apps/memories/retrieval/signals), pure: time windows, speaker
perspective, entity specificity, diversity for list questions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.memories.retrieval.signals import (
    advice,
    chunk_share,
    condition,
    diversity,
    follow_up,
    speaker,
    specificity,
    time_window,
)

SATURDAY_NOON = datetime(2024, 1, 20, 12, tzinfo=UTC)  # a Saturday


def _window(query: str, reference: datetime = SATURDAY_NOON) -> list[tuple[str, str]]:
    return [
        (window.start.date().isoformat(), window.end.date().isoformat())
        for window in time_window.windows(query, reference=reference)
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did she do on 31 Dec 2023?", [("2023-12-31", "2024-01-01")]),
        ("What food did Sam share on 19 August, 2023?", [("2023-08-19", "2023-08-20")]),
        ("Where was he on May 8, 2023?", [("2023-05-08", "2023-05-09")]),
        ("What did I eat yesterday?", [("2024-01-19", "2024-01-20")]),
        ("What did you tell me last week?", [("2024-01-08", "2024-01-15")]),
        ("What did Caroline do last weekend?", [("2024-01-13", "2024-01-15")]),
        ("What did I plan for the first week of January?", [("2024-01-01", "2024-01-08")]),
        ("Where was Jolene during the last week of August 2023?", [("2023-08-25", "2023-09-01")]),
        ("Where did they go in early March?", [("2023-03-01", "2023-03-11")]),
        ("What did Jon do in October?", [("2023-10-01", "2023-11-01")]),
        ("What happened in 2023?", [("2023-01-01", "2024-01-01")]),
        ("What did we do last summer?", [("2022-06-01", "2022-09-01")]),
        ("What happened at Christmas?", [("2023-12-24", "2023-12-27")]),
        ("What did he do two weeks ago?", [("2024-01-01", "2024-01-08")]),
        ("How many tournaments had Nate won by July 10, 2022?", [("1900-01-01", "2022-07-11")]),
        ("What changed since May?", [("2023-05-01", "2200-01-01")]),
        ("What was Dave doing in the first weekend of October 2023?", [("2023-10-07", "2023-10-09")]),
        ("Where were they the last weekend of September 2023?", [("2023-09-30", "2023-10-02")]),
        ("Where was Dave in the last two weeks of August 2023?", [("2023-08-18", "2023-09-01")]),
        ("What did I plan for the first 2 weeks of June?", [("2023-06-01", "2023-06-15")]),
        ("Was the first half of September 2022 a good month?", [("2022-09-01", "2022-09-16")]),
        ("What did she do in the latter half of March 2022?", [("2022-03-16", "2022-04-01")]),
        ("Which tournament did Nate win in the beginning of November 2022?", [("2022-11-01", "2022-11-11")]),
        ("What did they do at the start of May?", [("2023-05-01", "2023-05-11")]),
        ("What did she do with her pups over the weekend before 4th October, 2023?", [("2023-09-30", "2023-10-02")]),
        ("What did Maria do last weekend before April 10, 2023?", [("2023-04-08", "2023-04-10")]),
        ("What did he do the day after May 8, 2023?", [("2023-05-09", "2023-05-10")]),
        ("Where was she the week before 4 October 2023?", [("2023-09-27", "2023-10-04")]),
        ("What happened towards the end of summer 2023?", [("2023-08-01", "2023-09-01")]),
        ("What did we do at the beginning of last summer?", [("2022-06-01", "2022-07-01")]),
        ("What is the budget through August?", [("1900-01-01", "2023-09-01")]),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_time_expressions_become_windows_against_the_reference_time(query, expected):
    assert _window(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie paint a sunrise?",
        "Did I fall asleep?",
        "What are 2 things he likes?",
        "May I ask what she likes?",
        "What does she do on weekends?",  # habitual, no date
    ],
)
def test_questions_without_a_date_name_no_window(query):
    assert _window(query) == []


def test_relative_expressions_count_from_the_reference_not_from_today():
    # the same words asked as of another day name another week
    assert _window("What did you tell me last week?", reference=datetime(2023, 6, 14, tzinfo=UTC)) == [
        ("2023-06-05", "2023-06-12")
    ]


def test_a_memory_matches_a_window_by_the_day_it_was_said_or_a_day_it_names():
    (window,) = time_window.windows("What did he do on 16 March 2022?", reference=SATURDAY_NOON)
    said_on = datetime(2022, 3, 17, 9, tzinfo=UTC)
    assert time_window.matches([window], [said_on]) is None
    # "Yesterday I went bowling", said on 17 March: its index terms name the 16th
    named = time_window.named_days("17 March 2022 16 March 2022")
    assert time_window.matches([window], [said_on, *named]) == window


def test_index_terms_name_days_and_months():
    assert time_window.named_days("8 May 2023 April 2023") == [
        datetime(2023, 5, 8, tzinfo=UTC),
        datetime(2023, 4, 1, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        ("What did Caroline research?", ["Caroline"], "What did I research?"),
        ("What is Caroline's identity?", ["Caroline"], "What is my identity?"),
        ("Who gave Mel a gift?", ["Mel"], "Who gave me a gift?"),
        ("When did Mel go hiking with Caroline?", ["Mel"], "When did I go hiking with Caroline?"),
        ("What did Caroline research?", [], "What did Caroline research?"),
        # the query's words come with their possessive ("Caroline's"): still the name
        ("What is Caroline's identity?", ["Caroline's"], "What is my identity?"),
    ],
)
def test_a_question_about_one_speaker_is_embedded_from_their_side(query, names, expected):
    assert speaker.perspective(query, names=names) == expected
    assert speaker.perspective_for(query, [names] if names else []) == expected


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        # the one named first is "I", the other "you"
        ("What did Jon say about Gina's store?", [["Gina's"], ["Jon"]], "What did I say about your store?"),
        ("What does Mel think about Caroline?", [["Caroline"], ["Mel"]], "What does I think about you?"),
        ("Who gave Caroline a gift from Mel?", [["Mel"], ["Caroline"]], "Who gave me a gift from you?"),
        # both together are "we", "us" after a verb or preposition that takes an object, "our" with a possessive
        ("What do Jon and Gina both like?", [["Jon"], ["Gina"]], "What do we both like?"),
        ("Who helped Gina and Jon?", [["Jon"], ["Gina"]], "Who helped us?"),
        ("What did Jon and Gina's kids paint?", [["Gina's"], ["Jon"]], "What did our kids paint?"),
        # three speakers named, or none: the question as asked
        ("Did Ann, Bo and Cy meet?", [["Ann"], ["Bo"], ["Cy"]], "Did Ann, Bo and Cy meet?"),
        ("What did they paint?", [], "What did they paint?"),
    ],
)
def test_a_question_about_both_speakers_is_embedded_as_they_would_say_it_to_each_other(query, names, expected):
    assert speaker.perspective_for(query, names) == expected


def test_the_speaker_signal_needs_exactly_one_named_speaker():
    assert speaker.match(memory_speaker="Caroline", named_speakers={"caroline"}) == 1.0
    assert speaker.match(memory_speaker="Melanie", named_speakers={"caroline"}) == 0.0
    assert speaker.match(memory_speaker="Caroline", named_speakers={"caroline", "melanie"}) == 0.0
    assert speaker.match(memory_speaker="", named_speakers={"caroline"}) == 0.0


def test_a_name_on_half_the_memories_weighs_little_and_a_rare_one_a_lot():
    rare = specificity.weight(linked=2, total=600)
    frequent = specificity.weight(linked=300, total=600)
    assert specificity.weight(linked=1, total=600) == 1.0
    assert rare > 0.8
    assert frequent < 0.15
    assert specificity.combined([]) == 0.0
    assert specificity.combined([0.5, 0.5]) == 0.75  # two matches count more than one
    assert specificity.combined([frequent]) == frequent


@pytest.mark.parametrize(
    "query",
    [
        "What are all the places he travelled?",
        "How many times did she go hiking?",
        "What books has John read?",
        "Which countries has Jolene visited?",
        "List the pets Andrew has",
        "Which cities did they visit?",
    ],
)
def test_list_and_count_questions_ask_for_many(query):
    assert diversity.asks_for_many(query)


@pytest.mark.parametrize(
    "query",
    [
        "What is the name of Ana's kitten?",
        "When did she go to Paris?",
        "Where does he work?",
        "What was his status?",
        "What kind of pot did she make?",  # one pot
        "How did I plan both backend and frontend?",
    ],
)
def test_one_answer_questions_do_not(query):
    assert not diversity.asks_for_many(query)


@pytest.mark.parametrize(
    "query",
    [
        "How many days passed between the meeting and the deadline?",
        "How many weeks do I have until the launch?",
        "How many total hours have I spent studying?",
        "How many months passed between Andrew adopting Buddy and Scout",
    ],
)
def test_a_duration_is_not_a_count(query):
    assert not diversity.asks_for_many(query)


@pytest.mark.parametrize(
    "query",
    [
        "How many days did he spend in all the cities he visited?",  # "all": still a list
        "How many daylilies did she plant?",  # a count of things whose name starts like a unit
    ],
)
def test_a_duration_does_not_hide_another_cue(query):
    assert diversity.asks_for_many(query)


def test_diversity_places_one_result_per_conversation_before_repeats():
    # (score, session, text): two paraphrases of one session's episode outrank another session's answer
    items = [
        (0.90, "s1", "I went hiking in the Alps with my sister"),
        (0.88, "s1", "Hiking in the Alps with my sister was great"),
        (0.76, "s2", "We flew to Lisbon for the weekend"),
    ]
    placed = diversity.diversified(items, score=lambda i: i[0], session=lambda i: i[1], text=lambda i: i[2])
    assert [item.item[2][:10] for item in placed] == ["I went hik", "We flew to", "Hiking in "]
    assert placed[0].penalty == 0.0
    assert placed[2].penalty > 0.0


def test_every_signal_of_the_score_is_registered_with_a_weight():
    from dataclasses import fields

    from apps.memories import scoring
    from apps.memories.retrieval.signals import REGISTRY

    registered = [signal.name for signal in REGISTRY]
    assert registered == [field.name for field in fields(scoring.Signals)]
    assert set(registered) == {field.name for field in fields(scoring.Weights)}


def test_a_pattern_counts_half_unless_a_summary_is_asked_for():
    from apps.memories.retrieval.signals import pattern_share

    assert pattern_share.factor("pattern") == 0.5
    assert pattern_share.factor("pattern", summary=True) == 1.0
    assert {pattern_share.factor(kind) for kind in ("episode", "fact", "preference")} == {1.0}
    # a session's summary (a fact compression writes) sums its episodes up as a pattern does
    assert pattern_share.factor("fact", session_summary=True) == 0.5
    assert pattern_share.factor("fact", summary=True, session_summary=True) == 1.0


def test_a_chunk_of_a_long_message_counts_its_share_and_an_unsplit_turn_all():
    from apps.memories.retrieval.signals import chunk_share

    assert chunk_share.factor(1) == 1.0 and chunk_share.factor(0) == 1.0
    assert chunk_share.factor(2) == pytest.approx(2**-0.2, abs=1e-4)
    assert chunk_share.factor(10) == pytest.approx(0.631, abs=1e-3)
    # the more chunks, the smaller each one's share, softly: a relevant chunk still ranks
    shares = [chunk_share.factor(n) for n in range(1, 30)]
    assert shares == sorted(shares, reverse=True) and min(shares) > 0.5
    # read from ingest's metadata only: whole numbers, chunk i of n with i < n
    assert chunk_share.split_into("3", "10") == 10
    assert [chunk_share.split_into(*pair) for pair in [(None, "10"), ("10", "10"), ("1.5", "10"), ("-1", "10")]] == [
        1,
        1,
        1,
        1,
    ]


def test_the_speaker_match_counts_in_proportion_to_relevance():
    from apps.memories import scoring

    def score(similarity: float, speaker_match: float) -> float:
        signals = scoring.Signals(
            similarity=similarity,
            recency=0.0,
            importance=0.5,
            access_frequency=0.0,
            entity_match=0.0,
            speaker_match=speaker_match,
        )
        return scoring.retrieval_score(signals, scoring.CONTACT_WEIGHTS)

    # the named speaker's relevant turn gains the full weight; their irrelevant one gains nothing, so it
    # never outranks a relevant turn of the other speaker
    assert score(1.0, 1.0) - score(1.0, 0.0) == pytest.approx(scoring.CONTACT_WEIGHTS.speaker_match)
    assert score(0.0, 1.0) == score(0.0, 0.0)
    assert score(0.9, 0.0) > score(0.3, 1.0)


def test_a_time_match_adds_its_weight():
    from apps.memories import scoring

    base = scoring.Signals(similarity=0.5, recency=0.0, importance=0.5, access_frequency=0.0, entity_match=0.0)
    dated = scoring.Signals(
        similarity=0.5, recency=0.0, importance=0.5, access_frequency=0.0, entity_match=0.0, time_match=1.0
    )
    gain = scoring.retrieval_score(dated, scoring.CONTACT_WEIGHTS) - scoring.retrieval_score(
        base, scoring.CONTACT_WEIGHTS
    )
    assert gain == pytest.approx(scoring.CONTACT_WEIGHTS.time_match)


def test_a_narrow_window_tells_more_than_a_wide_one():
    day, week, month, year = (
        time_window.windows(query, reference=SATURDAY_NOON)[0]
        for query in ("on 31 Dec 2023", "last week", "in October", "in 2023")
    )
    assert [day.specificity, week.specificity, month.specificity, year.specificity] == [1.0, 0.6, 0.3, 0.1]


def test_a_memory_outside_a_narrow_window_keeps_half_its_score_and_outside_a_year_most():
    (day,) = time_window.windows("on 31 Dec 2023", reference=SATURDAY_NOON)
    (year,) = time_window.windows("in 2023", reference=SATURDAY_NOON)
    assert time_window.miss_factor([day]) == 0.5
    assert time_window.miss_factor([year]) == 0.95
    assert time_window.miss_factor([day, year]) == 0.5
    assert time_window.miss_factor([]) == 1.0


@pytest.mark.parametrize(
    "query",
    [
        "Can you give me a comprehensive summary of how my weather app project has progressed?",
        "Can you summarize what I learned about autocomplete?",
        "Summarise our discussions about the budget tracker",
        "A quick recap of the deployment steps, please",
        "Give me an overview of the security work so far",
        "Could you sum it up for me?",
    ],
)
def test_a_request_for_a_summary_is_recognised(query):
    assert chunk_share.asks_for_summary(query)


def test_a_summary_request_keeps_a_chunks_whole_score():
    assert chunk_share.factor(10) < 1.0
    assert chunk_share.factor(10, summary=True) == 1.0


@pytest.mark.parametrize(
    "query",
    [
        "What did I say about the summer trip?",  # "summer" is no summary
        "Which dishes would you suggest for my dinner?",
        "How many summits did he climb?",
        "What is the sum of my two invoices?",
    ],
)
def test_other_questions_are_not_summary_requests(query):
    assert not chunk_share.asks_for_summary(query)


def test_an_instruction_whose_condition_is_met_is_raised_to_the_best_score():
    met = [condition.is_met(text, cosine) for text, cosine in [("", 0.9), ("recipes", 0.62), ("taxes", 0.2)]]
    assert met == [False, True, False]  # no condition: never; a condition far from the query: not met
    assert condition.raised([0.8, 0.3, 0.1], met) == [0.8, 0.8, 0.1]
    assert condition.raised([0.8, 0.3, 0.1], [False, False, False]) == [0.8, 0.3, 0.1]


@pytest.mark.parametrize(
    "query",
    [
        "Can you suggest some movies for my family?",
        "What would you recommend for my trip to Lisbon?",
        "How should I organize my week?",
        "Any tips for my first marathon?",
        "Can you help me plan my writing sessions?",
        "Do you have ideas for our anniversary?",
    ],
)
def test_requests_for_advice(query):
    assert advice.asks_for_advice(query)


@pytest.mark.parametrize(
    "query",
    [
        "What book did Caroline recommend to Melanie?",  # advice between two others, in the third person
        "What advice did Tim give John about endorsements?",
        "How did you recommend structuring my essay?",  # advice already given: the turn that gave it answers
        "What did you suggest I cook last week?",
        "When is my dentist appointment?",  # no request for advice
    ],
)
def test_other_questions_are_not_requests_for_advice(query):
    assert not advice.asks_for_advice(query)


def test_the_closest_fitting_preferences_of_a_request_for_advice_are_raised():
    cosines = [0.9, 0.6, 0.5, 0.45, 0.2]
    preference = [False, True, True, True, True]  # the first is an episode: never raised by this stage
    # the two closest preferences, each only if its cosine reaches ADVICE_FIT
    assert advice.fitting(cosines, preference, advice=True) == [False, True, True, False, False]
    assert advice.fitting([0.3, 0.2], [True, True], advice=True) == [False, False]  # none fits
    assert advice.fitting(cosines, preference, advice=False) == [False] * 5  # not a request for advice


def test_a_turn_gains_a_share_of_a_higher_turn_before_it():
    # candidates 0..3: turn 0 names the subject (0.8); turn 1 the other speaker's question (0.3); turn 2 the
    # answer (0.4); candidate 3 is a fact, not an episode (no previous turn, no turn of its own)
    scores = [0.8, 0.3, 0.4, 0.7]
    previous = [None, 0, 1, None]
    turns = ["m0", "m1", "m2", None]
    gains = follow_up.carried(scores, previous, turns, many=False)
    # two turns back: the answer gains 0.15 × (0.8 − 0.4), the question 0.15 × (0.8 − 0.3); the first turn and the
    # fact nothing
    assert gains == pytest.approx([0.0, 0.075, 0.06, 0.0])
    assert scores[2] + gains[2] < scores[0]  # a reply rises towards the turn it answers, never above it
    # one turn back only: the answer sees the question (lower than it) and gains nothing
    assert follow_up.carried(scores, previous, turns, many=False, depth=1)[2] == 0.0


def test_a_turn_gains_nothing_from_lower_turns_or_for_a_list_question():
    scores, previous, turns = [0.2, 0.3, 0.9], [None, 0, 1], ["m0", "m1", "m2"]
    assert follow_up.carried(scores, previous, turns, many=False)[2] == 0.0
    assert follow_up.carried([0.8, 0.3, 0.4], previous, turns, many=True) == [0.0, 0.0, 0.0]
    assert follow_up.carried([0.8, 0.3, 0.4], previous, turns, many=False, share=0.0) == [0.0, 0.0, 0.0]


def test_a_turn_is_scored_by_the_best_chunk_of_its_message():
    # candidates 0 and 1 are two chunks of one long message (0.2 and 0.9); candidate 2 follows the one of 0.2
    gains = follow_up.carried([0.2, 0.9, 0.5], [None, None, 0], ["long", "long", "next"], many=False)
    assert gains[2] == pytest.approx(0.15 * (0.9 - 0.5))


def test_the_previous_turn_is_known_next_to_a_seed():
    at = datetime(2023, 5, 1, tzinfo=UTC)
    # one session's candidate turns in order: 0 (seed), 1 (its neighbour after), 2 and 3 two chunks of one long
    # message (3 a seed), 4 a neighbour after a gap (neither it nor the turn before it a seed); 5 is not an episode
    places = [
        ("s1", (at, 1)),
        ("s1", (at, 2)),
        ("s1", (at, 5)),
        ("s1", (at, 5)),
        ("s1", (at, 9)),
        None,
        ("s2", (at, 3)),  # another session: nothing before it
    ]
    seeds = [True, False, False, True, False, True, True]
    previous = follow_up.previous_turns(places, seeds)
    # 1 follows the seed 0; the long message (2, 3) holds a seed, so the turn before it is its previous; 4 comes
    # after the long message, which holds a seed: the seed's next turn is a candidate, so it is 4
    assert previous == [None, 0, 1, 1, 2, None, None]
    # without the seed in the long message, neither it nor the turn after it can tell what came between
    assert follow_up.previous_turns(places, [True, False, False, False, False, True, True])[2:5] == [None, None, None]


def test_the_stage_reads_the_previous_turns_and_nothing_for_a_list_question():
    at = datetime(2023, 5, 1, tzinfo=UTC)
    places = [("s1", (at, 1)), ("s1", (at, 2)), ("s1", (at, 3))]
    scores, seeds = [0.8, 0.3, 0.4], [True, True, True]
    assert follow_up.gains(scores, places, seeds, many=False) == pytest.approx([0.0, 0.075, 0.06])
    assert follow_up.gains(scores, places, seeds, many=True) == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Sam do the day after the concert?", [("concert", "day", False, "the day after the concert")]),
        ("Who called the night before her trip to Paris?", [("trip", "day", True, "the night before her trip")]),
        (
            "Where were they the weekend after the wedding?",
            [("wedding", "weekend", False, "the weekend after the wedding")],
        ),
        ("How did she feel after the charity race?", [("charity race", "", False, "after the charity race")]),
        # the event's words end at the first function word: "the visit to the hospital" is "visit"
        ("Why did he enlist after the visit to the hospital?", [("visit", "", False, "after the visit")]),
    ],
)
def test_a_time_named_by_an_event_is_read_as_the_event_and_a_span_next_to_it(query, expected):
    assert [(a.words, a.unit, a.before, a.text) for a in time_window.event_anchors(query)] == expected


@pytest.mark.parametrize(
    "query",
    [
        "What did she do the week after the holidays?",  # a time word, not an event
        "What happened before the end of May?",
        "What did I say before that?",
        "What did she do after 8 May?",  # a date: the patterns above read it
        "What did she cook last night?",
    ],
)
def test_times_and_dates_are_not_events(query):
    assert time_window.event_anchors(query) == ()


def test_an_events_window_is_counted_from_the_day_it_happened():
    concert = datetime(2024, 3, 2, tzinfo=UTC).date()  # a Saturday
    day, weekend, week, month, before, after = (
        time_window.event_anchors(query)[0].window(concert)
        for query in (
            "the day after the concert",
            "the weekend before the concert",
            "the week after the concert",
            "the month before the concert",
            "before the concert",
            "after the concert",
        )
    )
    span = lambda window: (window.start.date().isoformat(), window.end.date().isoformat())  # noqa: E731
    assert span(day) == ("2024-03-03", "2024-03-04")
    assert span(weekend) == ("2024-02-24", "2024-02-26")  # a Saturday's weekend before is the previous one
    assert span(week) == ("2024-03-03", "2024-03-10")
    assert span(month) == ("2024-02-01", "2024-03-02")
    assert span(before) == ("1900-01-01", "2024-03-03")  # open: all time up to the day, the day included
    assert span(after) == ("2024-03-02", "2200-01-01")
    assert day.text == "the day after the concert" and day.specificity == 1.0 and after.specificity == 0.1


def test_an_events_day_is_the_day_its_memory_names_else_the_day_it_was_said():
    said = datetime(2024, 3, 3, 17, tzinfo=UTC)
    assert time_window.event_day(said, "2 March 2024") == datetime(2024, 3, 2, tzinfo=UTC).date()
    assert time_window.event_day(said, "") == said.date()
    assert time_window.event_day(said, "March 2024") == said.date()  # a month is not a day
