from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from apps.core import schema  # noqa: F401  (registers the API key's OpenAPI security scheme)
