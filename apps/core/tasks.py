from celery import shared_task
from celery.signals import task_postrun, task_prerun, worker_ready

from apps.core.health import worker_heartbeat_record
from apps.core.tenancy import bind_task_tenant, unbind_task_tenant

# row-level security: a task given a tenant_id runs bound to that tenant (apps/core/tenancy.py)
task_prerun.connect(bind_task_tenant, weak=False)
task_postrun.connect(unbind_task_tenant, weak=False)


@shared_task(name="apps.core.tasks.heartbeat_task", ignore_result=True)
def heartbeat_task() -> None:
    worker_heartbeat_record()


@worker_ready.connect
def _heartbeat_on_start(**_: object) -> None:
    # infrastructure signal, not business logic: /healthz turns green as soon as a worker is up
    worker_heartbeat_record()
