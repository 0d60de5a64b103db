"""The base of every task (`TenantBoundTask`: the Celery app's task class) runs it bound as it declares
(row-level security, apps/core/tenancy.py) — inside the call, after Celery's Django fixup has closed or
replaced the connection at the task's start (a binding made in `task_prerun` was lost with it).

The base of the tasks acknowledged late: a message is delivered again when its worker dies mid-task
(`acks_late`, `reject_on_worker_lost`), so nothing is lost — but a task that kills its worker every time
(a poison message) would be delivered forever. Deliveries are counted per task id in Redis; past
MAX_DELIVERIES the task is logged and dropped (acknowledged without running)."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from apps.core.redis import RedisError, get_redis
from apps.core.tenancy import task_binding

logger = logging.getLogger(__name__)

MAX_DELIVERIES = 3
DELIVERIES_TTL_SECONDS = 24 * 60 * 60


def deliveries_key(task_id: str) -> str:
    return f"engram:task:deliveries:{task_id}"


class TenantBoundTask(Task):  # type: ignore[misc]
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with task_binding(self, kwargs):
            return super().__call__(*args, **kwargs)


class DeliveryCappedTask(TenantBoundTask):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        task_id = getattr(self.request, "id", None)
        if task_id:
            try:
                redis_client = get_redis()
                deliveries = int(redis_client.incr(deliveries_key(task_id)))
                redis_client.expire(deliveries_key(task_id), DELIVERIES_TTL_SECONDS)
            except RedisError:
                deliveries = 1  # the broker is this Redis: without it the task would not be here either
            if deliveries > MAX_DELIVERIES:
                logger.error(
                    "Task %s[%s] was delivered %d times (its worker died each time): dropped",
                    self.name,
                    task_id,
                    deliveries,
                )
                return None
        return super().__call__(*args, **kwargs)
