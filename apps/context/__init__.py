"""Context assembly: what GET /context/{contact_id} and POST /brain/context hand the LLM (no models)."""
