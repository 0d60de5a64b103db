from django.urls import path

from apps.inspector import views

app_name = "inspector"

urlpatterns = [
    path("", views.home, name="home"),
]
