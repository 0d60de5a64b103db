"""A simulated year of one realistic contact: real dates, the real ingest path, the lifecycle jobs run as
time passes (deferred consolidation after each session, the periodic job daily on a controlled clock),
GET /context before each session (so memories are used the way a chat client uses them).

At the end it prints the memory count (bounded?) and checks every fact and preference the contact
stated and never corrected: still current and retrievable, and found by a question about it.
"""

from __future__ import annotations

import random
import time
from argparse import ArgumentParser
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from tqdm import tqdm

from apps.contacts.models import Contact
from apps.context.services import context_payload
from apps.conversations.models import Conversation
from apps.core.commands import DatabaseCommand
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.lifecycle.deferred import conversation_consolidate
from apps.memories.lifecycle.periodic import tenant_consolidate
from apps.memories.models import Memory
from apps.memories.retrieval.access import access_flush
from apps.memories.retrieval.search import memory_search
from apps.tenants.services import tenant_create, tenant_delete


@dataclass(frozen=True)
class Statement:
    day: int
    text: str
    expected: str  # the memory content it must leave behind
    question: str  # a question whose answer is that memory
    corrected_on: int | None = None  # the day a later statement corrects it


STATEMENTS = [
    Statement(1, "Hi! I'm Asha, I have a dog named Bruno", "Has a dog named Bruno", "What is the name of her dog?"),
    Statement(2, "I live in Pune", "Lives in Pune", "Where does she live?", corrected_on=190),
    Statement(3, "I work at Infosys", "Works at Infosys", "Where does she work?", corrected_on=240),
    Statement(5, "I love biryani", "Loves biryani", "What food does she love?"),
    Statement(8, "I don't like spicy food", "Doesn't like spicy food", "Does she like spicy food?"),
    Statement(12, "My sister Maya lives in Jaipur", "Sister Maya lives in Jaipur", "Where does her sister live?"),
    Statement(20, "I'm 29 years old", "Is 29 years old", "How old is she?"),
    Statement(33, "I prefer short emails", "Prefers short emails", "What kind of emails does she prefer?"),
    Statement(47, "I'm a vegetarian", "Is a vegetarian", "Does she eat meat?"),
    Statement(61, "My favourite band is Coldplay", "Favourite band is Coldplay", "What is her favourite band?"),
    Statement(75, "I have a cat named Mochi", "Has a cat named Mochi", "Does she have a cat?"),
    Statement(90, "I study at the Open University", "Studies at the Open University", "Where does she study?"),
    Statement(
        120,
        "I don't want to talk about politics",
        "Doesn't want to talk about politics",
        "Which topics should be avoided?",
    ),
    Statement(
        150,
        "I love hiking in the Western Ghats",
        "Loves hiking in the Western Ghats",
        "What outdoor activity does she love?",
    ),
    Statement(190, "I moved to Mumbai", "Lives in Mumbai", "Where does she live now?"),
    Statement(240, "I work at Wipro now", "Works at Wipro", "Where does she work now?"),
    Statement(300, "My manager is Ravi", "Manager is Ravi", "Who is her manager?"),
]

CHATTER = [
    "Bruno chased the neighbour's cat {when}",
    "Work was crazy {when}, the sprint review went on for {n} hours",
    "Made {dish} for dinner, simple but good",
    "Went for a {n} km run by the lake {when}",
    "Mochi knocked my coffee off the table {when}",
    "Watched a documentary about {topic} tonight",
    "My team shipped release {n}.{m} finally",
    "It rained the whole day, stayed in and read about {topic}",
    "Took Bruno to the vet {when}, he needs {n} more shots",
    "Called Maya, she's planning a trip to {place}",
    "Tried a new recipe with {dish}, turned out great",
    "Long meeting about the Q{m} numbers {when}",
    "Walked Bruno in the park {when}, he met a {breed}",
    "Studied {topic} for my course for {n} hours",
    "Feeling tired after a long week of {topic}",
]
DISHES = ["dal and rice", "paneer", "dosa", "pasta", "khichdi", "poha", "rajma", "biryani"]
TOPICS = ["the ocean", "volcanoes", "statistics", "databases", "ancient Rome", "jazz", "economics", "birds"]
PLACES = ["Goa", "Kerala", "Ladakh", "Jaipur", "Udaipur", "Sikkim"]
BREEDS = ["golden retriever", "beagle", "pug", "husky", "labrador"]
WHEN = ["this morning", "today", "again", "after lunch", "this evening", "yesterday"]


def chatter(rng: random.Random) -> str:
    return rng.choice(CHATTER).format(
        when=rng.choice(WHEN),
        n=rng.randint(2, 9),
        m=rng.randint(1, 4),
        dish=rng.choice(DISHES),
        topic=rng.choice(TOPICS),
        place=rng.choice(PLACES),
        breed=rng.choice(BREEDS),
    )


LOW_CONTENT = ["lol", "ok", "haha", "hmm", "👍", "ok cool"]


class Command(DatabaseCommand):
    help = "Simulate a year of one contact's messages with the lifecycle jobs; print memory counts and fact retention."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--days", type=int, default=365)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--keep", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        rng = random.Random(options["seed"])
        days = options["days"]
        start = datetime(2025, 1, 1, tzinfo=UTC)
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        tenant = tenant_create(name=f"simulated year {run}", slug=f"sim-year-{run}")
        by_day: dict[int, list[Statement]] = {}
        for statement in STATEMENTS:
            if statement.day < days:
                by_day.setdefault(statement.day, []).append(statement)
        messages = 0
        counts_over_time: list[tuple[int, int]] = []
        started = time.perf_counter()
        try:
            for day in tqdm(range(days), unit="day", file=self.stdout):
                stated = by_day.get(day, [])
                if not stated and rng.random() > 0.7:
                    self._periodic(tenant, start + timedelta(days=day, hours=23, minutes=59))
                    continue
                at = start + timedelta(days=day, hours=rng.choice([21, 22]), minutes=rng.randint(0, 30))
                texts = [s.text for s in stated] + [
                    chatter(rng) if rng.random() > 0.2 else rng.choice(LOW_CONTENT) for _ in range(rng.randint(2, 8))
                ]
                contact = Contact.objects.filter(tenant=tenant, external_id="asha").first()
                if contact is not None:
                    context_payload(
                        tenant=tenant,
                        contact=contact,
                        query=texts[0],
                        conversation=None,
                        token_budget=None,
                        explain=False,
                    )
                    access_flush()
                items = [
                    IngestItem(
                        contact_id="asha",
                        conversation_id=f"day-{day}",
                        message=text,
                        display_name="Asha",
                        occurred_at=at + timedelta(minutes=index * 2),
                        channel="whatsapp",
                    )
                    for index, text in enumerate(texts)
                ]
                ingest_messages(tenant=tenant, items=items, actor="simulation", now=items[-1].occurred_at)
                messages += len(items)
                conversation = Conversation.objects.get(tenant=tenant, external_id=f"day-{day}")
                conversation_consolidate(conversation_id=str(conversation.pk))
                self._periodic(tenant, start + timedelta(days=day, hours=23, minutes=59))
                if day % 30 == 29:
                    counts_over_time.append((day + 1, self._current(tenant).count()))
            self._report(tenant, messages, counts_over_time, time.perf_counter() - started, days)
        finally:
            if not options["keep"]:
                tenant_delete(tenant=tenant)

    @staticmethod
    def _periodic(tenant: Any, now: datetime) -> None:
        tenant_consolidate(tenant=tenant, now=now)

    @staticmethod
    def _current(tenant: Any) -> Any:
        return Memory.objects.filter(
            tenant=tenant, contact__isnull=False, valid_to__isnull=True, deleted_at__isnull=True, is_compressed=False
        )

    def _report(self, tenant: Any, messages: int, counts: list[tuple[int, int]], seconds: float, days: int) -> None:
        contact = Contact.objects.get(tenant=tenant, external_id="asha")
        current = self._current(tenant)
        kept = Counter(current.values_list("memory_type", flat=True))
        everything = Memory.objects.filter(tenant=tenant, contact=contact)
        self.stdout.write(f"\n{days} days, {messages} messages ingested in {seconds:.0f} s")
        episodes = everything.filter(memory_type="episode").count()
        self.stdout.write(f"memories ever written: {everything.count()}  (episodes {episodes})")
        self.stdout.write(
            f"in context now (current, not compressed, not pruned): {current.count()}  "
            + ", ".join(f"{kind} {count}" for kind, count in sorted(kept.items()))
        )
        self.stdout.write(
            f"compressed episodes: {everything.filter(is_compressed=True).count()}, "
            f"pruned: {everything.filter(deletion_reason='pruned').count()}, "
            f"superseded: {everything.filter(valid_to__isnull=False).count()}"
        )
        self.stdout.write("memories in context by month: " + ", ".join(f"day {day}: {count}" for day, count in counts))
        kept_facts, found, lost = 0, 0, []
        for statement in STATEMENTS:
            if statement.day >= days or (statement.corrected_on is not None and statement.corrected_on < days):
                continue
            memory = current.filter(content=statement.expected).first()
            if memory is None or memory.importance < 0.1:
                lost.append(statement.expected)
                continue
            kept_facts += 1
            results = memory_search(tenant=tenant, contact=contact, query=statement.question, top_k=10).results
            found += int(any(item.memory.pk == memory.pk for item in results))
        corrected = [s for s in STATEMENTS if s.corrected_on is not None and s.corrected_on < days]
        still_current = [s.expected for s in corrected if current.filter(content=s.expected).exists()]
        total = kept_facts + len(lost)
        self.stdout.write(
            f"stated, never corrected facts/preferences: {total}; still current and retrievable: {kept_facts}; "
            f"found in the top 10 by a question about them: {found}/{kept_facts}"
        )
        if lost:
            self.stdout.write(self.style.ERROR(f"LOST: {lost}"))
        self.stdout.write(
            f"corrected facts: {len(corrected)}; still current (should be 0): {len(still_current)} {still_current}"
        )
