from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from apps.core import checks, schema  # noqa: F401  (register the database checks, the API key's OpenAPI scheme)
