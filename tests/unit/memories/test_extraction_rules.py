"""Inline rules-based extraction: pure functions, no database."""

from __future__ import annotations

import pytest

from apps.memories.extraction import (
    ExtractedEntity,
    ExtractedMemory,
    Extraction,
    clean_text,
    extract,
    is_low_content,
    slugify,
)
from apps.memories.extraction.rules import (
    addressed_names,
    case_uses,
    instruction_condition,
    written_as_common_word,
)


def stated(extraction: Extraction) -> list[tuple[str, str, str | None, int, bool]]:
    """Facts and preferences as (type, statement, slot, polarity, is_correction)."""
    return [
        (memory.memory_type, memory.statement(), memory.slot, memory.polarity, memory.is_correction)
        for memory in extraction.memories
        if memory.memory_type != "episode"
    ]


def entity_keys(extraction: Extraction) -> list[str]:
    return [entity.key for entity in extraction.entities]


# ---- cleaning ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("  hello there \n", "hello there"),
        ("line one\r\nline two\rline three", "line one\nline two\nline three"),
        ("a\n\n\n\nb", "a\n\nb"),
        ("a\n\nb", "a\n\nb"),
        ("a\n  \n\t\n\nb", "a\n\nb"),
        ("Cafe\u0301 au lait", "Caf\u00e9 au lait"),
        ("**bold**  and _italic_", "**bold**  and _italic_"),
        ("```py\nx = 1\n\n\n\n    y = 2\n```", "```py\nx = 1\n\n    y = 2\n```"),
        ("\ufeffhi", "hi"),
        ("", ""),
    ],
    ids=[
        "strip",
        "line-endings",
        "collapse-blank-lines",
        "keep-one-blank-line",
        "whitespace-only-lines-are-blank",
        "nfc",
        "formatting-kept",
        "code-kept-with-indentation",
        "bom",
        "empty",
    ],
)
def test_clean_text(raw, cleaned):
    assert clean_text(raw) == cleaned


@pytest.mark.parametrize(
    "text",
    [
        "lol",
        "ok",
        "okay",
        "hmm",
        "haha",
        "hahaha",
        "k",
        "yes",
        "no",
        "thanks",
        "ty",
        "👍",
        "😂😂😂",
        "!!!",
        "...",
        "ok sure",
        "lol ok",
        "Okkkk",
        "hmmmm",
        "Thank you!",
        "",
        "   ",
        "Haha yes 😂",
        "good morning",
        "no worries",
        "LOL",
    ],
    ids=[
        "lol",
        "ok",
        "okay",
        "hmm",
        "haha",
        "hahaha",
        "k",
        "yes",
        "no",
        "thanks",
        "ty",
        "thumbs-up",
        "emoji-only",
        "punctuation-only",
        "ellipsis",
        "ok-sure",
        "lol-ok",
        "elongated-ok",
        "elongated-hmm",
        "thank-you",
        "empty",
        "whitespace",
        "laugh-and-emoji",
        "greeting",
        "phrase",
        "upper-case",
    ],
)
def test_low_content(text):
    assert is_low_content(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "Bruno ate my shoes again",
        "I love sushi",
        "My sister is visiting",
        "5",
        "ok so Bruno is sick",
        "no, I work at Infosys",
        "why did the vet say that?",
    ],
    ids=["event", "preference", "relation", "a-number", "filler-then-content", "no-then-fact", "question"],
)
def test_meaningful_content(text):
    assert is_low_content(text) is False


def test_low_content_turn_yields_nothing():
    extraction = extract("  lol ok 👍  ")

    assert extraction == Extraction(cleaned_text="lol ok 👍", is_low_content=True, memories=(), entities=())


# ---- facts -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm a software engineer", [("fact", "Is a software engineer", None, 0, False)]),
        ("I am an architect.", [("fact", "Is an architect", None, 0, False)]),
        ("I'm a morning person", [("fact", "Is a morning person", None, 0, False)]),
        ("I'm not a morning person", [("fact", "Is not a morning person", None, 0, False)]),
        ("I'm vegetarian", [("fact", "Is vegetarian", None, 0, False)]),
        ("I'm allergic to peanuts", [("fact", "Is allergic to peanuts", None, 0, False)]),
        ("I'm Indian", [("fact", "Is Indian", None, 0, False)]),
        ("I'm married", [("fact", "Is married", "attribute:relationship-status", 0, False)]),
        ("I'm 29 years old", [("fact", "Is 29 years old", "age", 0, False)]),
        ("I am 29", [("fact", "Is 29 years old", "age", 0, False)]),
        ("I'm 29 yo", [("fact", "Is 29 years old", "age", 0, False)]),
        ("I just turned 30!", [("fact", "Is 30 years old", "age", 0, False)]),
        ("I'm from Pune", [("fact", "Is from Pune", None, 0, False)]),
        ("I'm originally from New York City", [("fact", "Is originally from New York City", None, 0, False)]),
        ("I have a dog named Bruno", [("fact", "Has a dog named Bruno", None, 0, False)]),
        ("I've got two kids", [("fact", "Has two kids", None, 0, False)]),
        ("I have a sister named Maya", [("fact", "Has a sister named Maya", None, 0, False)]),
        ("I don't have any pets", [("fact", "Doesn't have any pets", None, 0, False)]),
        ("My manager is Ravi", [("fact", "Manager is Ravi", "relation:manager", 0, False)]),
        ("My name is Arjun", [("fact", "Name is Arjun", "name", 0, False)]),
        ("my name is arjun", [("fact", "Name is Arjun", "name", 0, False)]),
        ("Hi, I'm Arjun", [("fact", "Name is Arjun", "name", 0, False)]),
        ("Call me Ari", [("fact", "Goes by Ari", "nickname", 0, False)]),
        ("My birthday is May 8", [("fact", "Birthday is May 8", "attribute:birthday", 0, False)]),
        ("My sister is a doctor", [("fact", "Sister is a doctor", None, 0, False)]),
        ("My mom lives in Chennai", [("fact", "Mom lives in Chennai", None, 0, False)]),
        ("My dog's name is Bruno", [("fact", "Has a dog named Bruno", None, 0, False)]),
        ("My wife Priya is visiting", [("fact", "Wife is Priya", "relation:wife", 0, False)]),
        ("My friend Sam is visiting", [("fact", "Has a friend named Sam", None, 0, False)]),
        ("I work at Infosys", [("fact", "Works at Infosys", "workplace", 0, False)]),
        ("I work for Google as a designer", [("fact", "Works for Google as a designer", "workplace", 0, False)]),
        (
            "I'm working at Tata Consultancy Services",
            [("fact", "Works at Tata Consultancy Services", "workplace", 0, False)],
        ),
        ("I work as a nurse", [("fact", "Works as a nurse", None, 0, False)]),
        ("I study at MIT", [("fact", "Studies at MIT", "school", 0, False)]),
        (
            "I study computer science at Stanford",
            [("fact", "Studies computer science at Stanford", "school", 0, False)],
        ),
        ("I live in Mumbai", [("fact", "Lives in Mumbai", "location:residence", 0, False)]),
        ("I live in Austin, Texas with my wife", [("fact", "Lives in Austin, Texas", "location:residence", 0, False)]),
        ("I'm based in Berlin", [("fact", "Is based in Berlin", "location:residence", 0, False)]),
        ("I moved to Mumbai", [("fact", "Lives in Mumbai", "location:residence", 0, True)]),
        ("I've moved to Bangalore last month", [("fact", "Lives in Bangalore", "location:residence", 0, True)]),
        ("Our blog traffic is now 800", [("fact", "Blog traffic is 800", "metric:traffic", 0, False)]),
        ("Our traffic was 500", [("fact", "Traffic was 500", "metric:traffic", 0, False)]),
        ("My followers are now 12k", [("fact", "Followers are 12k", "metric:followers", 0, False)]),
        ("Our conversion rate is 3.2%", [("fact", "Conversion rate is 3.2%", "metric:conversion-rate", 0, False)]),
    ],
    ids=[
        "identity",
        "identity-an",
        "identity-compound",
        "identity-negated",
        "stable-state",
        "allergy",
        "nationality",
        "relationship-status",
        "age-years-old",
        "age-bare",
        "age-yo",
        "age-turned",
        "from",
        "from-originally",
        "have-pet",
        "got-kids",
        "have-sibling",
        "have-not",
        "my-manager-is",
        "my-name-is",
        "my-name-is-lower-case",
        "introduces-self",
        "call-me",
        "attribute",
        "relative-description",
        "relative-lives-in",
        "pet-name-is",
        "spouse-appositive",
        "friend-appositive",
        "work-at",
        "work-for-as",
        "working-at",
        "work-as",
        "study-at",
        "study-subject-at",
        "live-in",
        "live-in-region",
        "based-in",
        "moved-to",
        "have-moved-to",
        "metric-is-now",
        "metric-was",
        "metric-plural",
        "metric-compound",
    ],
)
def test_fact_patterns(text, expected):
    assert stated(extract(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I'm tired",
        "I'm so happy today",
        "I'm going to the gym",
        "I'm not sure",
        "I'm just checking in",
        "I'm feeling low",
        "I'm a bit tired",
        "I'm 5 minutes away",
        "I have a headache",
        "I have to go",
        "I have a meeting at 5pm",
        "I've been busy",
        "I'm thinking of moving to Berlin",
        "If I had a dog I would name him Max",
        "Do you think I'm a good writer?",
        "I don't think that I'm a good writer",
        "I'd like to book a table",
        "I want to know the price",
        "We are a family of four",
    ],
    ids=[
        "tired",
        "so-happy",
        "going-to",
        "not-sure",
        "just",
        "feeling",
        "a-bit",
        "minutes-not-age",
        "headache",
        "have-to",
        "meeting",
        "been",
        "future-move",
        "hypothetical",
        "question",
        "hedged-by-lead-in",
        "request",
        "request-verb",
        "we-are-in-contact-scope",
    ],
)
def test_transient_states_and_requests_are_not_facts(text):
    assert stated(extract(text)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Actually, I live in Delhi now", [("fact", "Lives in Delhi", "location:residence", 0, True)]),
        ("Correction: my manager is Suresh", [("fact", "Manager is Suresh", "relation:manager", 0, True)]),
        ("I no longer work at Infosys", [("fact", "No longer works at Infosys", "workplace", 0, True)]),
        ("I don't work at Infosys anymore", [("fact", "No longer works at Infosys", "workplace", 0, True)]),
        ("I no longer live in Pune", [("fact", "No longer lives in Pune", "location:residence", 0, True)]),
        ("I'm not a vegetarian anymore", [("fact", "Is no longer a vegetarian", None, 0, True)]),
        ("I no longer have a car", [("fact", "No longer has a car", None, 0, True)]),
        ("I don't like coffee anymore", [("preference", "Doesn't like coffee", None, -1, True)]),
        ("I don't want any more emails", [("preference", "Doesn't want any more emails", None, -1, False)]),
    ],
    ids=[
        "actually",
        "correction-colon",
        "no-longer-work",
        "not-anymore-work",
        "no-longer-live",
        "not-anymore-identity",
        "no-longer-have",
        "not-anymore-preference",
        "any-more-as-quantity-is-not-a-correction",
    ],
)
def test_corrections(text, expected):
    assert stated(extract(text)) == expected


# ---- preferences -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I like sushi", [("preference", "Likes sushi", None, 1, False)]),
        ("I love sushi 😍", [("preference", "Loves sushi", None, 1, False)]),
        ("I really like hiking in the mountains", [("preference", "Likes hiking in the mountains", None, 1, False)]),
        ("I prefer tea over coffee", [("preference", "Prefers tea over coffee", None, 1, False)]),
        ("I prefer short answers please", [("preference", "Prefers short answers", None, 1, False)]),
        ("I'd rather stay home", [("preference", "Would rather stay home", None, 1, False)]),
        ("I would rather not go out tonight", [("preference", "Would rather not go out tonight", None, -1, False)]),
        ("I don't like spicy food", [("preference", "Doesn't like spicy food", None, -1, False)]),
        ("I do not like spicy food", [("preference", "Doesn't like spicy food", None, -1, False)]),
        ("I dont like spicy food", [("preference", "Doesn't like spicy food", None, -1, False)]),
        ("I don\u2019t like spicy food", [("preference", "Doesn't like spicy food", None, -1, False)]),
        (
            "I don't really like talking about politics",
            [("preference", "Doesn't like talking about politics", None, -1, False)],
        ),
        ("I never liked horror movies", [("preference", "Doesn't like horror movies", None, -1, False)]),
        ("I'm not a fan of jazz", [("preference", "Is not a fan of jazz", None, -1, False)]),
        ("I'm a huge fan of Coldplay", [("preference", "Is a fan of Coldplay", None, 1, False)]),
        ("I hate olives", [("preference", "Hates olives", None, -1, False)]),
        ("I can't stand loud music", [("preference", "Can't stand loud music", None, -1, False)]),
        ("I don't eat meat", [("preference", "Doesn't eat meat", None, -1, False)]),
        ("Don't talk about my ex", [("preference", "Doesn't want to talk about their ex", None, -1, False)]),
        ("I don't want to talk about work", [("preference", "Doesn't want to talk about work", None, -1, False)]),
        (
            "Can we talk about Diwali sweet recipes?",
            [("preference", "Wants to talk about Diwali sweet recipes", None, 1, False)],
        ),
        ("Let's talk about football", [("preference", "Wants to talk about football", None, 1, False)]),
        (
            "My favorite movie is Inception",
            [("preference", "Favourite movie is Inception", "attribute:favourite-movie", 1, False)],
        ),
        (
            "My favourite colour is blue",
            [("preference", "Favourite colour is blue", "attribute:favourite-colour", 1, False)],
        ),
        (
            "Biryani is my favourite food",
            [("preference", "Favourite food is Biryani", "attribute:favourite-food", 1, False)],
        ),
        ("I don't want posts longer than 800 words", [("preference", "Prefers posts under 800 words", None, 1, False)]),
        (
            "I don't want blog posts longer than 800 words",
            [("preference", "Prefers blog posts under 800 words", None, 1, False)],
        ),
        ("I don't want a call back", [("preference", "Doesn't want a call back", None, -1, False)]),
        ("Please don't use emojis", [("preference", "Doesn't want you to use emojis", None, -1, False)]),
        ("Please always use metric units", [("preference", "Wants you to always use metric units", None, 1, False)]),
        (
            "Always include version numbers when I ask about libraries",
            [
                (
                    "preference",
                    "Wants you to always include version numbers when they ask about libraries",
                    None,
                    1,
                    False,
                )
            ],
        ),
        (
            "I always drink coffee in the morning",
            [("preference", "Always drinks coffee in the morning", None, 1, False)],
        ),
        ("I want to learn Spanish", [("preference", "Wants to learn Spanish", None, 1, False)]),
        ("I'd love to visit Japan someday", [("preference", "Would love to visit Japan someday", None, 1, False)]),
        ("I love sushi, do you?", [("preference", "Loves sushi", None, 1, False)]),
        ("I love my job", [("preference", "Loves their job", None, 1, False)]),
    ],
    ids=[
        "like",
        "love-with-emoji",
        "filler-adverb",
        "prefer",
        "trailing-please",
        "would-rather",
        "would-rather-not",
        "dont-like",
        "do-not-like",
        "dont-without-apostrophe",
        "curly-apostrophe",
        "dont-really-like-talking",
        "never-liked",
        "not-a-fan",
        "fan-of",
        "hate",
        "cant-stand",
        "dont-eat",
        "dont-talk-about",
        "dont-want-to-talk",
        "can-we-talk-about",
        "lets-talk-about",
        "favorite-us-spelling",
        "favourite-colour",
        "favourite-reverse",
        "length-limit",
        "length-limit-blog-posts",
        "dont-want",
        "instruction",
        "instruction-always",
        "instruction-always-with-condition",
        "habit",
        "want-to",
        "would-love-to",
        "tag-question-trimmed",
        "pronoun-to-third-person",
    ],
)
def test_preference_patterns(text, expected):
    assert stated(extract(text)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I don't like X",
        "I do not like X",
        "I don't really like X",
        "I never liked X",
        "I no longer like X",
    ],
    ids=["dont", "do-not", "dont-really", "never", "no-longer"],
)
def test_negated_like_is_never_a_positive_like(text):
    memories = [memory for memory in extract(text).memories if memory.memory_type != "episode"]

    assert [(memory.statement(), memory.polarity) for memory in memories] == [("Doesn't like X", -1)]
    assert not any(memory.statement().startswith("Likes") for memory in extract(text).memories)


@pytest.mark.parametrize(
    "text",
    ["I'm not sure I like it", "I love you", "I like it", "Do you think I like pizza?", "I used to love cricket"],
    ids=["hedged", "bare-pronoun-you", "bare-pronoun-it", "question", "past-habit"],
)
def test_no_preference_without_a_real_object(text):
    assert stated(extract(text)) == []


# ---- several memories per message --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I have a dog named Bruno and I work at Infosys",
            [("fact", "Has a dog named Bruno", None, 0, False), ("fact", "Works at Infosys", "workplace", 0, False)],
        ),
        (
            "I'm 35 and I live in Toronto. I love sushi but I hate olives.",
            [
                ("fact", "Is 35 years old", "age", 0, False),
                ("fact", "Lives in Toronto", "location:residence", 0, False),
                ("preference", "Loves sushi", None, 1, False),
                ("preference", "Hates olives", None, -1, False),
            ],
        ),
        (
            "I'm a vegan and I don't eat honey",
            [("fact", "Is a vegan", None, 0, False), ("preference", "Doesn't eat honey", None, -1, False)],
        ),
        (
            "My wife Priya works at Google",
            [
                ("fact", "Wife Priya works at Google", None, 0, False),
                ("fact", "Wife is Priya", "relation:wife", 0, False),
            ],
        ),
        (
            "My cat Luna hates baths",
            [("preference", "Cat Luna hates baths", None, -1, False), ("fact", "Has a cat named Luna", None, 0, False)],
        ),
    ],
    ids=["fact-and-fact", "two-sentences-four-memories", "fact-and-preference", "relative-fact-and-name", "pet-pref"],
)
def test_multiple_memories_per_message(text, expected):
    assert stated(extract(text)) == expected


def test_memories_are_facts_and_preferences_then_one_episode():
    extraction = extract("I have a dog named Bruno. I love sushi. My sister Maya is visiting from London next week.")

    assert [memory.memory_type for memory in extraction.memories] == ["fact", "preference", "fact", "episode"]
    assert extraction.episode is extraction.memories[-1]


# ---- entities ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my dog Bruno ate my shoes again", [ExtractedEntity("pet", "bruno", "Bruno", {"species": "dog"})]),
        ("my wife Priya is visiting", [ExtractedEntity("person", "priya", "Priya", {"relation": "wife"})]),
        ("I work at Infosys", [ExtractedEntity("workplace", "infosys", "Infosys", {})]),
        (
            "My golden retriever Bruno is 3",
            [ExtractedEntity("pet", "bruno", "Bruno", {"species": "dog", "breed": "golden retriever"})],
        ),
        ("I have a sister named Maya", [ExtractedEntity("person", "maya", "Maya", {"relation": "sister"})]),
        ("My manager is Ravi", [ExtractedEntity("person", "ravi", "Ravi", {"relation": "manager"})]),
        ("My mother is Lakshmi", [ExtractedEntity("person", "lakshmi", "Lakshmi", {"relation": "mom"})]),
        (
            "Visited my mom for Diwali",
            [
                ExtractedEntity("person", "mom", "mom", {"relation": "mom"}),
                ExtractedEntity("name", "diwali", "Diwali", {}),
            ],
        ),
        (
            "I have two cats, Milo and Luna",
            [
                ExtractedEntity("pet", "milo", "Milo", {"species": "cat"}),
                ExtractedEntity("pet", "luna", "Luna", {"species": "cat"}),
            ],
        ),
        ("I'm a student at Delhi University", [ExtractedEntity("school", "delhi-university", "Delhi University", {})]),
        ("I live in New York", [ExtractedEntity("location", "new-york", "New York", {})]),
        (
            "i work at infosys and i live in pune",
            [
                ExtractedEntity("workplace", "infosys", "Infosys", {}),
                ExtractedEntity("location", "pune", "Pune", {}),
            ],
        ),
        ("I don't like talking about politics", [ExtractedEntity("topic", "politics", "politics", {})]),
        ("I like talking about politics", [ExtractedEntity("topic", "politics", "politics", {})]),
        (
            "Can we talk about Diwali sweet recipes?",
            [
                ExtractedEntity("topic", "diwali-sweet-recipes", "Diwali sweet recipes", {}),
            ],
        ),
        ("I love playing guitar", [ExtractedEntity("hobby", "playing-guitar", "playing guitar", {})]),
        (
            "I like cats and dogs",
            [
                ExtractedEntity("topic", "cats", "cats", {}),
                ExtractedEntity("topic", "dogs", "dogs", {}),
            ],
        ),
        ("Bruno ate my shoes again", [ExtractedEntity("name", "bruno", "Bruno", {})]),
        ("Sweet Dreams is my favourite bakery", [ExtractedEntity("name", "sweet-dreams", "Sweet Dreams", {})]),
        (
            "Melanie and I watched The Office on Monday",
            [
                ExtractedEntity("name", "melanie", "Melanie", {}),
                ExtractedEntity("name", "the-office", "The Office", {}),
            ],
        ),
        (
            "I have a dog named Bruno. Bruno is the best.",
            [ExtractedEntity("pet", "bruno", "Bruno", {"species": "dog"})],
        ),
        ("My name is Arjun and I love Bangalore", [ExtractedEntity("topic", "bangalore", "Bangalore", {})]),
        ("bruno ate my shoes again", []),
        ("LOL BRUNO ATE MY SHOES AGAIN", []),
    ],
    ids=[
        "my-dog-name",
        "my-wife-name",
        "workplace",
        "breed",
        "sibling-named",
        "manager-is",
        "canonical-relation",
        "unnamed-relative-and-name",
        "pets-listed",
        "school",
        "location",
        "lower-case-message",
        "topic-negative",
        "topic-positive",
        "talk-topic",
        "hobby",
        "topic-list",
        "bare-name",
        "bigram-name",
        "weekday-is-not-a-name",
        "typed-wins-over-name",
        "own-name-is-not-an-entity",
        "lower-case-has-no-names",
        "shouting-has-no-names",
    ],
)
def test_entities(text, expected):
    assert list(extract(text).entities) == expected


def test_memory_entities_are_the_entities_its_statement_names():
    extraction = extract("I have a dog named Bruno and I work at Infosys")
    fact_bruno, fact_infosys, episode = extraction.memories

    assert [entity.key for entity in fact_bruno.entities] == ["pet:bruno"]
    assert [entity.key for entity in fact_infosys.entities] == ["workplace:infosys"]
    assert [entity.key for entity in episode.entities] == ["pet:bruno", "workplace:infosys"]


def test_entity_is_hashable_and_compares_metadata():
    bruno = ExtractedEntity("pet", "bruno", "Bruno", {"species": "dog"})

    assert bruno.key == "pet:bruno"
    assert {bruno, ExtractedEntity("pet", "bruno", "Bruno", {"species": "dog"})} == {bruno}
    assert bruno != ExtractedEntity("pet", "bruno", "Bruno", {"species": "cat"})


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Bruno", "bruno"),
        ("Diwali sweet recipes", "diwali-sweet-recipes"),
        ("Café Mocha", "cafe-mocha"),
        ("O'Brien & Sons", "obrien-sons"),
        ("Tata  Consultancy_Services", "tata-consultancy-services"),
    ],
    ids=["word", "phrase", "accent", "apostrophe-ampersand", "whitespace-underscore"],
)
def test_slugify(text, slug):
    assert slugify(text) == slug


# ---- supersession slots ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("earlier", "later", "slot", "later_is_correction"),
    [
        ("I live in Pune", "I moved to Mumbai", "location:residence", True),
        ("Our traffic was 500", "Our traffic is now 800", "metric:traffic", False),
        ("Our blog traffic was 500", "Traffic is now 800", "metric:traffic", False),
        ("My manager is Ravi", "My manager is Suresh", "relation:manager", False),
        ("I work at Infosys", "Actually I work at Wipro", "workplace", True),
        ("I work at Infosys", "I no longer work at Infosys", "workplace", True),
        ("I study at MIT", "I'm studying at Harvard", "school", False),
        ("I'm 29", "I just turned 30", "age", False),
        ("My name is Arav", "Actually my name is Aarav", "name", True),
        ("My favourite colour is blue", "My favourite colour is green", "attribute:favourite-colour", False),
        ("I'm single", "I'm engaged to Sam", "attribute:relationship-status", False),
    ],
    ids=[
        "residence",
        "metric",
        "metric-qualified",
        "manager",
        "workplace-correction",
        "workplace-left",
        "school",
        "age",
        "name",
        "favourite",
        "relationship-status",
    ],
)
def test_changing_facts_share_a_slot(earlier, later, slot, later_is_correction):
    (first,) = [memory for memory in extract(earlier).memories if memory.memory_type != "episode"]
    (second,) = [memory for memory in extract(later).memories if memory.memory_type != "episode"]

    assert (first.slot, second.slot) == (slot, slot)
    assert second.is_correction is later_is_correction


def test_accumulating_facts_have_no_slot():
    memories = [memory for memory in extract("I have a sister named Maya").memories]

    assert [memory.slot for memory in memories] == [None, None]


# ---- roles and scopes --------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["assistant", "system", "tool"], ids=["assistant", "system", "tool"])
def test_other_roles_yield_only_the_episode(role):
    text = "That sounds lovely! I love dogs too. My dog is named Rex and I work at OpenAI."
    extraction = extract(text, role=role)

    assert extraction.memories == (
        ExtractedMemory(
            memory_type="episode",
            predicate=text,
            entities=(ExtractedEntity("name", "rex", "Rex", {}), ExtractedEntity("name", "openai", "OpenAI", {})),
        ),
    )


def test_other_roles_low_content_yields_nothing():
    assert extract("ok 👍", role="assistant").memories == ()


@pytest.mark.parametrize(
    ("text", "expected", "keys"),
    [
        (
            "We are a small bakery in Pune",
            [("fact", "Business is a small bakery in Pune", None, 0, False)],
            ["location:pune"],
        ),
        (
            "Our business is a digital marketing agency",
            [("fact", "Business is a digital marketing agency", None, 0, False)],
            [],
        ),
        (
            "We sell handmade candles and soaps",
            [("fact", "Sells handmade candles and soaps", None, 0, False)],
            ["product:handmade-candles", "product:soaps"],
        ),
        (
            "We offer SEO audits and content writing",
            [("fact", "Offers SEO audits and content writing", None, 0, False)],
            ["service:seo-audits", "service:content-writing"],
        ),
        (
            "We're located in Bandra, Mumbai",
            [("fact", "Is located in Bandra, Mumbai", "location:business", 0, False)],
            ["location:bandra-mumbai"],
        ),
        (
            "Our shop is located in Koramangala",
            [("fact", "Is located in Koramangala", "location:business", 0, False)],
            ["location:koramangala"],
        ),
        (
            "We moved to Indiranagar",
            [("fact", "Is located in Indiranagar", "location:business", 0, True)],
            ["location:indiranagar"],
        ),
        (
            "Our blog traffic was 500 last month",
            [("fact", "Blog traffic was 500 last month", "metric:traffic", 0, False)],
            [],
        ),
        (
            "I don't want posts longer than 800 words",
            [("preference", "Prefers posts under 800 words", None, 1, False)],
            ["topic:posts"],
        ),
    ],
    ids=[
        "we-are",
        "our-business-is",
        "we-sell",
        "we-offer",
        "located-in",
        "shop-located-in",
        "moved",
        "metric",
        "owner-preference",
    ],
)
def test_tenant_scope_business_facts(text, expected, keys):
    extraction = extract(text, scope="tenant")

    assert stated(extraction) == expected
    assert entity_keys(extraction) == keys


def test_contact_scope_we_moved_is_the_residence():
    assert stated(extract("We moved to Canada last year")) == [
        ("fact", "Lives in Canada", "location:residence", 0, True)
    ]


def test_unknown_scope_is_rejected():
    with pytest.raises(ValueError, match="scope must be one of contact, tenant"):
        extract("I live in Pune", scope="global")


# ---- statements and episodes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "subject", "statement"),
    [
        ("I have a dog named Bruno", None, "Has a dog named Bruno"),
        ("I have a dog named Bruno", "Caroline", "Caroline has a dog named Bruno"),
        ("I don't like spicy food", "Caroline", "Caroline doesn't like spicy food"),
        ("I'd rather stay home", "Caroline", "Caroline would rather stay home"),
        ("My manager is Ravi", None, "Manager is Ravi"),
        ("My manager is Ravi", "Caroline", "Caroline's manager is Ravi"),
        ("My favourite colour is blue", "Caroline", "Caroline's favourite colour is blue"),
        ("We are a bakery", "Acme", "Acme's business is a bakery"),
    ],
    ids=[
        "no-subject",
        "subject",
        "negative-preference",
        "would-rather",
        "possessive-no-subject",
        "possessive",
        "favourite",
        "business",
    ],
)
def test_statement(text, subject, statement):
    memory = next(memory for memory in extract(text, scope="tenant").memories if memory.memory_type != "episode")

    assert memory.statement(subject) == statement


def test_episode_is_the_cleaned_message_verbatim():
    extraction = extract("  Bruno ate my shoes AGAIN!!\r\n\n\n\nugh  ")
    episode = extraction.episode

    assert episode == ExtractedMemory(
        memory_type="episode",
        predicate="Bruno ate my shoes AGAIN!!\n\nugh",
        entities=(ExtractedEntity("name", "bruno", "Bruno", {}),),
    )
    assert episode.statement() == "Bruno ate my shoes AGAIN!!\n\nugh"
    assert episode.statement("Caroline") == "Caroline: Bruno ate my shoes AGAIN!!\n\nugh"


def test_episode_is_capped_at_1000_characters():
    text = "word " * 400

    episode = extract(text).episode

    assert episode is not None
    assert episode.predicate == ("word " * 200).strip()
    assert len(episode.predicate) == 999


def test_predicate_is_capped_at_200_characters():
    (memory,) = [m for m in extract("I love " + "very long things " * 30).memories if m.memory_type != "episode"]

    # cut at the last whole word within 200 characters
    assert memory.predicate == "loves" + " very long things" * 11 + " very"
    assert len(memory.predicate) == 197


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Thanks, Melanie! That means a lot.", []),
        ("Hey Caroline! How was the trip?", []),
        ("Melanie, that painting is lovely", []),
        ("That's so kind, Caroline.", []),
        ("I went hiking with Melanie yesterday", ["melanie"]),
        ("Caroline told me about the adoption agency", ["caroline"]),
    ],
    ids=["thanks-comma", "hey", "leading-vocative", "trailing-vocative", "mention", "sentence-start-mention"],
)
def test_addressing_someone_is_not_a_mention(text, names):
    found = [entity.slug for entity in extract(text).entities if entity.entity_type == "name"]
    assert found == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Thanks, Mel! That means a lot.", ["Mel"]),
        ("Hey Rosie! How was the trip?", ["Rosie"]),
        ("Lucky you, Rosie. I stayed home.", ["Rosie"]),
        ("Yup! Sounds like a plan.", []),
        ("Nah, I'm good. Thanks, Deb!", ["Deb"]),
        ("Hopefully, it works out this time.", []),
        ("Great game! Woohoo! See you, Cal.", ["Cal"]),
        ("I'll keep you posted. Ttyl, Bye!", []),  # a sign-off after a comma is no one's name
        ("Sounds good, Thanks!", []),
    ],
    ids=[
        "thanks-comma",
        "hey",
        "after-comma",
        "interjection",
        "interjection-then-name",
        "adverb",
        "many-sentences",
        "sign-off",
        "thanks-after-comma",
    ],
)
def test_an_alias_is_learned_from_a_name_that_does_not_open_its_sentence(text, names):
    # a word that opens its sentence followed by "!" or "," is as often an interjection as a name
    assert addressed_names(text) == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Seeing Frank Ocean live was a dream", ["frank-ocean"]),
        ("Been busy with the garden all week", []),
        ("Congrats on the new job!", []),
        ("Moments like that make it worth it", []),
        ("Having a picnic with Anna on Sunday", ["anna"]),
        ("Boston was freezing when we landed", ["boston"]),
    ],
    ids=["gerund-then-name", "been", "congrats", "plural-common-word", "gerund-with-mention", "place-name"],
)
def test_a_word_form_opening_a_sentence_is_not_a_name(text, names):
    found = [entity.slug for entity in extract(text).entities if entity.entity_type == "name"]
    assert found == names


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("How're you doing finding peace?", []),
        ("It'd be great to see Anna this summer", ["anna"]),
        ("They\u2019ll help with the process", []),
        ("What've you been reading lately?", []),
        ("Such a special moment with Jon.", ["jon"]),
        ("Whenever I see Maria I smile", ["maria"]),
        ("O'Brien called me today", ["obrien"]),
        ("Sa'd called me today", ["sad"]),
    ],
    ids=["how-re", "it-d", "they-ll-typographic", "what-ve", "such", "whenever", "irish-name", "name-ending-in-d"],
)
def test_a_contraction_or_a_function_word_opening_a_sentence_is_not_a_name(text, names):
    """Found in LoCoMo's entity lists ("howre", "itd", "theyll", "such", "whenever" were entities): a common word
    with a contraction's ending, or a function word, opens a sentence; a name with an apostrophe stays a name."""
    found = [entity.slug for entity in extract(text).entities if entity.entity_type == "name"]
    assert found == names


def test_a_word_of_letters_never_holds_a_digit_so_low_content_skips_reading_it():
    """is_low_content reads only the words that are not all letters for a digit ("2nd" counts, "②" too): sound
    because no character is both a letter and a digit in this Python's Unicode tables."""
    import sys

    assert not [chr(code) for code in range(sys.maxunicode + 1) if chr(code).isalpha() and chr(code).isdigit()]
    assert not is_low_content("ok ②") and not is_low_content("lol 2nd") and is_low_content("ok lol")


def test_collapsing_the_joined_words_collapses_each_word():
    """is_low_content collapses repeats ("okkk" → "ok") once over the words joined by spaces instead of word by
    word: the same, since no run of one character crosses a space between two words."""
    import random

    from apps.memories.extraction.cleaning import _WORD, _collapse_repeats

    rng = random.Random(19)
    alphabet = "aabbko'lh2é"
    texts = ["okkk okkk", "lol lol lol", "hahaha ahh hhh", "a a a", "nooo oooh", "ll ll", "é é éé"]
    texts += [
        " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(5)) for _ in range(2000)
    ]
    for text in texts:
        words = _WORD.findall(text)
        assert _collapse_repeats(" ".join(words)) == " ".join(_collapse_repeats(word) for word in words), text


def test_case_uses_count_lower_case_and_names_inside_a_sentence():
    texts = [
        "Pottery is my thing. I took a pottery class with Bruno.",  # "Pottery" opens its sentence: not counted
        '"Pottery again," said Bruno. [shares a photo: Pottery on a shelf]',  # after a quote, after a colon
        "so much pottery lately",  # no informative case: says nothing
        "Walked Bruno, then pottery.",
    ]
    assert case_uses(texts, ["pottery", "bruno"]) == {"pottery": (2, 0), "bruno": (0, 3)}


@pytest.mark.parametrize(
    ("lower", "capitalised", "common"),
    [
        (2, 0, True),  # "Pottery is…" once, "pottery" twice
        (70, 1, True),
        (1, 0, False),  # one lower-case use is not enough
        (2, 1, False),  # "Nintendo" in two captions, twice as a name
        (0, 5, False),
    ],
)
def test_a_word_written_in_lower_case_is_not_a_name(lower, capitalised, common):
    assert written_as_common_word(lower, capitalised) is common


@pytest.mark.parametrize(
    ("text", "instruction"),
    [
        # a verb outside the usual list is an instruction when the user says when it applies
        (
            "Always confirm time zones when I ask about meeting times.",
            "wants you to always confirm time zones when they ask about meeting times",
        ),
        (
            "Always specify currency when I ask about budgets.",
            "wants you to always specify currency when they ask about budgets",
        ),
        (
            "Please always address me formally whenever I mention contracts.",
            "wants you to always address them formally whenever they mention contracts",
        ),
        # ... but not a sentence about someone else, with its subject left out
        ("Always wins when I ask him to play chess.", None),
        ("Always happy to help when I ask.", None),
        ("Always available when I need her.", None),
        ("Always discussed politics when I talked to him.", None),
        # nor a verb outside the list without the condition
        ("Always confirm the time zone.", None),
    ],
)
def test_a_standing_instruction_with_its_condition_takes_any_verb(text, instruction):
    found = [m.predicate for m in extract(text, scope="contact", role="user").memories if m.memory_type == "preference"]
    assert found == ([instruction] if instruction else [])


@pytest.mark.parametrize(
    ("text", "condition"),
    [
        ("Always confirm time zones when I ask about meeting times.", "meeting times"),
        ("Please always address me formally whenever I mention contracts.", "contracts"),
        ("Always include version numbers when I ask about libraries", "libraries"),
        ("Always show the sources when I ask you for help with taxes.", "help with taxes"),
        # an instruction without a condition, and a preference that is not an instruction, have none
        ("Always include version numbers.", ""),
        ("I love talking about music when I ask about plans.", ""),
    ],
)
def test_a_standing_instruction_is_stored_with_what_it_applies_to(text, condition):
    """The condition is read from the stored statement (what a search compares a question with)."""
    statements = [m.statement("Sam") for m in extract(text, scope="contact", role="user").memories]
    found = [instruction_condition(statement) for statement in statements if instruction_condition(statement)]
    assert found == ([condition] if condition else [])


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        (
            "I prefer using Microsoft Word over Google Docs for formatting, can you help me with that?",
            "prefers using Microsoft Word over Google Docs for formatting",
        ),
        (
            "I want to include links to my portfolio - how can I make this work?",
            "wants to include links to their portfolio",
        ),
        ("I love hiking so can you suggest trails near Denver?", "loves hiking"),
        ("I prefer short answers; any tips for asking better questions?", "prefers short answers"),
        # not a request: kept whole
        ("I prefer the version you can carry around", "prefers the version you can carry around"),
    ],
)
def test_a_request_after_a_preference_is_not_part_of_it(text, predicate):
    """What the user asks the assistant for after saying what they like is not what they like."""
    found = [m.predicate for m in extract(text, scope="contact", role="user").memories if m.memory_type != "episode"]
    assert found == [predicate]


@pytest.mark.parametrize(
    "text",
    [
        "Thanks, Gina!",
        "Hey Sam! Long time no see!",
        "Wow Caroline, that looks amazing!",
        "Sorry to hear that, Sam.",
        "Great catching up! Take care, talk soon.",
        "Congrats, Joanna!",
        "thanks rosie!",
        "hey there",
        "Thanks again!",
    ],
)
def test_small_talk_to_a_name_is_low_content(text):
    """A greeting, thanks or reaction addressed to a name says nothing to remember (the name is whom it is
    said to, not what it is about)."""
    extraction = extract(text)

    assert extraction.is_low_content is True and extraction.memories == ()


@pytest.mark.parametrize(
    "text",
    [
        "Gina, my dog Bruno is sick",
        "I went to Paris, Sam!",
        "Thanks for the sushi tip, Gina!",
        "Sam, I love you",
        "sorry alex, I can't make it tonight",
        "ok, pizza!",
    ],
)
def test_a_turn_to_a_name_that_says_something_is_kept(text):
    assert extract(text).episode is not None


@pytest.mark.parametrize(
    "text",
    [
        "<Media omitted>",
        "\u200eimage omitted",
        "sticker omitted",
        "<attached: 00000012-PHOTO-2023-05-01-18-22-04.jpg>",
        "This message was deleted",
        "You deleted this message.",
        "Missed voice call",
        "[Photo]",
        "Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read them.",
        "ttyl",
        "Night!",
        "love that",
    ],
)
def test_a_chat_exports_placeholder_is_low_content(text):
    """What an exported chat shows where a message held no text (a photo, a deleted message, a call) is no
    memory: repeated in every session, it was merged into one episode naming hundreds of turns."""
    extraction = extract(text)

    assert extraction.is_low_content is True and extraction.memories == ()


@pytest.mark.parametrize(
    "text",
    [
        "I sent a photo of my new bike",
        "image omitted because it was too big lol",
        "[photo] my new bike!",
        "Did you see the video omitted from the report?",
    ],
)
def test_a_message_that_names_a_placeholder_is_kept(text):
    assert extract(text).episode is not None


def test_a_chat_exports_edit_note_is_not_part_of_the_memory():
    extraction = extract("I moved to Lisbon in May \u200e<This message was edited>")

    assert extraction.episode is not None and extraction.episode.predicate == "I moved to Lisbon in May"


def test_removing_an_exports_marks_keeps_the_joiners_of_words_and_emoji():
    family = "We took the kids 👨\u200d👩\u200d👧 to the zoo"
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 go"  # a zero-width non-joiner inside the word
    assert extract(family).episode.predicate == family
    assert extract(f"\u200e{persian}").episode.predicate == persian
