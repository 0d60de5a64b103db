"""Services queue tasks by name (apps/memories/dispatch.py), so a renamed task would be queued under a name no
worker knows: every name dispatch and beat use is a registered task, and a queued signature carries it."""

from __future__ import annotations

import pytest
from django.conf import settings

from apps.memories import dispatch
from config.celery_app import app

DISPATCH_NAMES = sorted(
    value for name, value in vars(dispatch).items() if name.isupper() and isinstance(value, str) and "." in value
)


@pytest.fixture(scope="module")
def registered() -> set[str]:
    app.loader.import_default_modules()  # what a worker imports at start: every app's tasks module
    return set(app.tasks)


@pytest.mark.parametrize("name", DISPATCH_NAMES)
def test_every_dispatched_name_is_a_registered_task(registered, name):
    assert name in registered


@pytest.mark.parametrize("entry", sorted(settings.CELERY_BEAT_SCHEDULE))
def test_every_beat_entry_names_a_registered_task(registered, entry):
    assert settings.CELERY_BEAT_SCHEDULE[entry]["task"] in registered


def test_every_memories_task_is_named_in_dispatch(registered):
    assert sorted(name for name in registered if name.startswith("apps.memories.")) == DISPATCH_NAMES
