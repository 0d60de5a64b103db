"""Synthetic but realistic chat messages and memories for the speed benchmarks (no dataset needed)."""

from __future__ import annotations

import random

NAMES = ["Bruno", "Priya", "Maya", "Ravi", "Mochi", "Arjun", "Leila", "Tom", "Sofia", "Kenji", "Amara", "Diego"]
PLACES = ["Chennai", "Mumbai", "Pune", "Lisbon", "Berlin", "Austin", "Nairobi", "Osaka", "Lima", "Toronto"]
THINGS = [
    "sourdough",
    "the violin",
    "chess",
    "sailing",
    "biryani",
    "jazz",
    "hiking",
    "pottery",
    "running",
    "gardening",
    "the payments service",
    "the quarterly report",
    "my thesis",
    "the blog",
    "the new kitchen",
    "cricket",
]
TEMPLATES = [
    "I have a dog named {name}",
    "My sister {name} lives in {place}",
    "I work at a startup in {place}",
    "I love {thing} on weekends",
    "I don't like {thing} very much",
    "We went to {place} last month and it rained every day",
    "{name} ate my shoes again this morning",
    "Can we talk about {thing} later?",
    "I'm worried about {thing}, the deadline is on Friday",
    "My manager {name} moved the launch to {place}",
    "I finished {thing} and I'm so happy about it!",
    "I prefer short emails, especially about {thing}",
    "lol ok",
    "haha that's amazing",
    "Yesterday I spent 3 hours on {thing} with {name}",
    "I'm 29 years old and I live in {place}",
]


def messages(count: int, *, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(TEMPLATES).format(name=rng.choice(NAMES), place=rng.choice(PLACES), thing=rng.choice(THINGS))
        for _ in range(count)
    ]


MEMORY_TEMPLATES = [
    "Has a {adjective} dog named {name}",
    "Prefers {thing} in the {time}",
    "Went to {place} with {name} for {thing}",
    "Works on {thing} with {name} in {place}",
    "Doesn't like talking about {thing}",
    "Was stressed about {thing} before the {time} deadline",
    "Usually chats about {thing} in the {time}",
    "Visited {name} in {place} and talked about {thing}",
]
ADJECTIVES = ["golden", "tiny", "lazy", "noisy", "old", "young", "clever", "shy"]
TIMES = ["morning", "evening", "weekend", "night", "afternoon"]


def memory_texts(count: int, *, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(MEMORY_TEMPLATES).format(
            adjective=rng.choice(ADJECTIVES),
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            thing=rng.choice(THINGS),
            time=rng.choice(TIMES),
        )
        + f" (note {index})"
        for index in range(count)
    ]


QUERY_TEMPLATES = [
    "How is {name} doing these days?",
    "What did I tell you about {thing}?",
    "Where does my sister live again?",
    "I'm thinking of going back to {place}, any ideas?",
    "Can you remind me what {name} said about {thing}?",
    "What should I avoid bringing up with {name}?",
    "Is there a deadline for {thing} this week?",
    "I want to get back into {thing} this weekend, what did I like about it?",
    "How was my trip to {place}?",
    "What do I usually do in the {time}?",
    "ugh {thing} again, it's due friday and {name} keeps changing the plan",
    "Any plans for {place} next month?",
    "do you remember my dog's name",
    "I told you about {name} and {thing} last time, right?",
]


def queries(count: int, *, seed: int = 5) -> list[str]:
    """Chat messages asked as retrieval queries (the user's latest turn): 7-25 tokens, the corpus's names,
    places and things, so every candidate source (vector, keyword, entity) has something to find."""
    rng = random.Random(seed)
    return [
        rng.choice(QUERY_TEMPLATES).format(
            name=rng.choice(NAMES), place=rng.choice(PLACES), thing=rng.choice(THINGS), time=rng.choice(TIMES)
        )
        for _ in range(count)
    ]
