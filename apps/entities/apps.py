from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "apps.entities"
    label = "entities"
