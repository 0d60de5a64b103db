from celery import shared_task
from django.utils.dateparse import parse_datetime

from apps.tenants.services import api_key_record_use


@shared_task(name="apps.tenants.tasks.api_key_record_use_task", ignore_result=True)
def api_key_record_use_task(*, api_key_id: int, used_at: str) -> int:
    parsed = parse_datetime(used_at)
    if parsed is None:
        return 0
    return api_key_record_use(api_key_id=api_key_id, used_at=parsed)
