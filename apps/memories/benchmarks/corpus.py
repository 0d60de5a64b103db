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


QUERIES = [
    "How is Bruno doing?",
    "What does she like to do on weekends?",
    "Where does his sister live?",
    "Is there a deadline this week?",
    "What music does he enjoy?",
    "Any plans for Lisbon?",
    "How was the trip?",
    "What should I avoid talking about?",
]
