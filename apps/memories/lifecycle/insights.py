"""The insight engine (ai-brain-memory.txt §4.1), run with the brain's scope in the 6-hourly job: trends across
the tenant's contacts become brain memories (rules: apps/memories/lifecycle/insight_rules.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, Q

from apps.contacts.intelligence.mood import NEGATIVE_MOODS
from apps.contacts.models import InteractionLog
from apps.memories.lifecycle import insight_rules
from apps.memories.store.writing import Candidate, memories_write
from apps.tenants.models import Tenant

INSIGHT_ACTOR = "system:insights"
INSIGHT_IMPORTANCE = 0.7

# Distinct contacts per entity (type, slug) whose memories of the last two windows link it, one statement
_TOPICS_SQL = """
SELECT e.entity_type, e.slug, min(e.display_name),
       count(DISTINCT m.contact_id) FILTER (WHERE m.occurred_at >= %(this_week)s),
       count(DISTINCT m.contact_id) FILTER (WHERE m.occurred_at < %(this_week)s)
FROM memories_memory m
JOIN memories_memoryentity me ON me.memory_id = m.id
JOIN entities_entity e ON e.id = me.entity_id
WHERE m.tenant_id = %(tenant)s AND m.contact_id IS NOT NULL AND m.deleted_at IS NULL
  AND m.occurred_at >= %(since)s AND m.occurred_at <= %(now)s AND e.entity_type <> 'person'
GROUP BY e.entity_type, e.slug
HAVING count(DISTINCT m.contact_id) FILTER (WHERE m.occurred_at >= %(this_week)s) >= %(minimum)s
"""


def tenant_insights_detect(*, tenant: Tenant, now: datetime) -> dict[str, int]:
    """Detect this week's trends and write them as brain memories (a trend already known reinforces its
    memory; a changed one supersedes it through its slot). Returns {"insights": how many written}."""
    this_week = now - timedelta(days=insight_rules.WINDOW_DAYS)
    since = this_week - timedelta(days=insight_rules.WINDOW_DAYS)
    with connection.cursor() as cursor:
        cursor.execute(
            _TOPICS_SQL,
            {
                "tenant": tenant.pk,
                "this_week": this_week,
                "since": since,
                "now": now,
                "minimum": insight_rules.TOPIC_MIN_CONTACTS,
            },
        )
        counts = [insight_rules.TopicCount(*row) for row in cursor.fetchall()]
    trends = insight_rules.topic_trends(counts)
    negative = Q(mood__in=sorted(NEGATIVE_MOODS))
    moods = InteractionLog.objects.filter(tenant=tenant, occurred_at__gte=since, occurred_at__lte=now).aggregate(
        total_now=Count("id", filter=Q(occurred_at__gte=this_week)),
        negative_now=Count("id", filter=Q(occurred_at__gte=this_week) & negative),
        total_before=Count("id", filter=Q(occurred_at__lt=this_week)),
        negative_before=Count("id", filter=Q(occurred_at__lt=this_week) & negative),
    )
    mood = insight_rules.mood_trend(**moods)
    if mood is not None:
        trends.append(mood)
    if not trends:
        return {"insights": 0}
    memories_write(
        tenant=tenant,
        contact=None,
        candidates=[
            Candidate(
                memory_type=trend.memory_type,
                content=trend.content,
                slot=trend.slot,
                importance=INSIGHT_IMPORTANCE,
                metadata={"insight": trend.slot},
            )
            for trend in trends
        ],
        occurred_at=now,
        actor=INSIGHT_ACTOR,
        now=now,
    )
    return {"insights": len(trends)}
