"""Accuracy of the offline keyword/emoji mood classifier on the labelled tables shipped with it."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from apps.contacts.intelligence.crisis import detect_crisis
from apps.contacts.intelligence.mood import classify_mood_keywords
from apps.contacts.intelligence.mood_dataset import CHALLENGE_MOODS, LABELLED_MOODS


class Command(BaseCommand):
    help = "Benchmark: keyword mood classifier accuracy (mood, mood+energy) and classifier/crisis speed."

    def handle(self, *args: Any, **options: Any) -> None:
        for name, table in (("labelled table", LABELLED_MOODS), ("challenge set", CHALLENGE_MOODS)):
            readings = [(row, classify_mood_keywords(row.text)) for row in table]
            mood_hits = sum(1 for row, reading in readings if reading.mood == row.mood)
            both_hits = sum(1 for row, reading in readings if (reading.mood, reading.energy) == (row.mood, row.energy))
            self.stdout.write(
                f"{name}: {len(table)} messages, mood accuracy {mood_hits / len(table):.3f}, "
                f"mood+energy {both_hits / len(table):.3f}"
            )
        texts = [row.text for row in LABELLED_MOODS] * 50
        began = time.perf_counter()
        for text in texts:
            classify_mood_keywords(text)
        mood_us = (time.perf_counter() - began) / len(texts) * 1e6
        began = time.perf_counter()
        for text in texts:
            detect_crisis(text)
        crisis_us = (time.perf_counter() - began) / len(texts) * 1e6
        self.stdout.write(f"speed: mood {mood_us:.0f} µs/message, crisis detection {crisis_us:.0f} µs/message")
