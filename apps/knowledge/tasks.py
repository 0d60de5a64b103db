"""The knowledge base's worker task: a document uploaded `processing` is chunked and embedded here."""

from __future__ import annotations

import logging

from celery import Task, shared_task

from apps.core.embeddings import EmbedderUnavailable
from apps.core.exceptions import ApplicationError
from apps.core.task_base import DeliveryCappedTask
from apps.core.tenancy import MAINTENANCE, TENANT
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.services import (
    DOCUMENT_PROCESS,
    REQUEUE_STALE_DOCUMENTS,
    document_fail,
    document_process,
    documents_requeue_stale,
)

logger = logging.getLogger(__name__)

# two retries: with the first run, three deliveries of one task id, DeliveryCappedTask's cap
EMBEDDER_RETRIES = 2
EMBEDDER_RETRY_SECONDS = 60


@shared_task(
    name=DOCUMENT_PROCESS, tenancy=TENANT, bind=True, acks_late=True, base=DeliveryCappedTask, ignore_result=True
)
def document_process_task(self: Task, *, tenant_id: str, document_id: str) -> str:
    """Runs bound to `tenant_id` (row-level security). The embedder down: retried twice, a minute apart, then
    the document fails with the embedder's public message; a document without text fails at once."""
    document = KnowledgeDocument.objects.filter(tenant_id=tenant_id, pk=document_id).first()
    if document is None:
        return "deleted"
    try:
        return document_process(document=document).status
    except EmbedderUnavailable as exc:
        if self.request.retries < EMBEDDER_RETRIES:
            raise self.retry(countdown=EMBEDDER_RETRY_SECONDS, exc=exc) from exc
        logger.error("Document %s failed: the embedder is unavailable (%s)", document_id, exc.reason)
        document_fail(document=document, message=exc.message)
    except ApplicationError as exc:
        document_fail(document=document, message=exc.message)
    except Exception:
        logger.exception("Document %s failed", document_id)
        document_fail(document=document, message="The document could not be processed (an internal error).")
    return document.status


@shared_task(name=REQUEUE_STALE_DOCUMENTS, tenancy=MAINTENANCE, ignore_result=True)  # a sweep across tenants
def requeue_stale_documents_task() -> int:
    return documents_requeue_stale()
