from apps.contacts.services.crud import (
    MAX_EXTERNAL_ID_LENGTH,
    contact_create,
    contact_delete,
    contact_get_or_create,
    contact_update,
    contacts_get_or_create_many,
)
from apps.contacts.services.state import (
    StatedMessage,
    StateUpdate,
    contact_crisis_report,
    contact_state_update,
    contact_state_update_many,
)
from apps.contacts.services.triggers import trigger_complete, trigger_create

__all__ = [
    "MAX_EXTERNAL_ID_LENGTH",
    "StateUpdate",
    "StatedMessage",
    "contact_create",
    "contact_crisis_report",
    "contact_delete",
    "contact_get_or_create",
    "contact_state_update",
    "contact_state_update_many",
    "contact_update",
    "contacts_get_or_create_many",
    "trigger_complete",
    "trigger_create",
]
