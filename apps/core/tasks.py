from celery import shared_task
from celery.signals import worker_ready

from apps.core.health import worker_heartbeat_record
from apps.core.tenancy import NO_TENANT


@shared_task(name="apps.core.tasks.heartbeat_task", ignore_result=True, tenancy=NO_TENANT)
def heartbeat_task() -> None:
    worker_heartbeat_record()


@worker_ready.connect
def _heartbeat_on_start(**_: object) -> None:
    # infrastructure signal, not business logic: /healthz turns green as soon as a worker is up
    worker_heartbeat_record()
