"""The insight engine's rules (ai-brain-memory.txt §4.1: "insight engine detects trend → fact, pattern", every
6 hours). Pure: the service (apps/memories/lifecycle/insights.py) reads the counts and writes the memories.

Two trends, each over the last 7 days against the 7 before:
- a topic: an entity (a product, a place, an organisation…) that contacts' memories link, named by at least
  TOPIC_MIN_CONTACTS distinct contacts this week and at least twice as many as the week before → a brain
  *pattern* ("Trending with contacts: …");
- the mood: the share of contacts' messages classified sad, anxious or angry, over at least MOOD_MIN_MESSAGES
  messages this week, TREND_SHIFT (absolute) above or below last week's → a brain *fact*.
Each carries a slot, so this week's insight supersedes last week's on the same topic or on the mood.
"""

from __future__ import annotations

from dataclasses import dataclass

TOPIC_MIN_CONTACTS = 3
TOPIC_GROWTH = 2.0
MOOD_MIN_MESSAGES = 20
TREND_SHIFT = 0.15
WINDOW_DAYS = 7


@dataclass(frozen=True)
class TopicCount:
    entity_type: str
    slug: str
    display_name: str
    contacts_now: int
    contacts_before: int


@dataclass(frozen=True)
class Trend:
    memory_type: str  # "pattern" or "fact"
    slot: str
    content: str


def topic_trends(counts: list[TopicCount]) -> list[Trend]:
    trends = []
    for count in counts:
        if count.contacts_now >= TOPIC_MIN_CONTACTS and count.contacts_now >= TOPIC_GROWTH * max(
            count.contacts_before, 1
        ):
            trends.append(
                Trend(
                    memory_type="pattern",
                    slot=f"insight:topic:{count.entity_type}:{count.slug}",
                    content=(
                        f"Trending with contacts: {count.display_name} ({count.entity_type}), named by "
                        f"{count.contacts_now} contacts this week, {count.contacts_before} the week before"
                    ),
                )
            )
    return trends


def mood_trend(*, negative_now: int, total_now: int, negative_before: int, total_before: int) -> Trend | None:
    if total_now < MOOD_MIN_MESSAGES:
        return None
    share_now = negative_now / total_now
    share_before = negative_before / total_before if total_before else 0.0
    if abs(share_now - share_before) < TREND_SHIFT:
        return None
    direction = "up" if share_now > share_before else "down"
    return Trend(
        memory_type="fact",
        slot="insight:mood",
        content=(
            f"Contacts' mood this week: {share_now:.0%} of their messages sad, anxious or angry, {direction} from "
            f"{share_before:.0%} the week before"
        ),
    )
