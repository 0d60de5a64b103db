from apps.contacts.services.crud import (
    MAX_EXTERNAL_ID_LENGTH,
    contact_create,
    contact_delete,
    contact_get_or_create,
    contact_update,
)
from apps.contacts.services.state import StateUpdate, contact_state_update
from apps.contacts.services.triggers import trigger_complete, trigger_create

__all__ = [
    "MAX_EXTERNAL_ID_LENGTH",
    "StateUpdate",
    "contact_create",
    "contact_delete",
    "contact_get_or_create",
    "contact_state_update",
    "contact_update",
    "trigger_complete",
    "trigger_create",
]
