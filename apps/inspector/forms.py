from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from apps.contacts.intelligence.mood import MOODS
from apps.contacts.intelligence.stages import STAGES
from apps.core.boundary import uploaded_text
from apps.core.exceptions import ApplicationError
from apps.inspector.selectors import CHURN_BUCKETS, SEEN_NEVER, SEEN_OLDER, SEEN_WINDOWS
from apps.knowledge.services import ALLOWED_CONTENT_TYPES
from apps.memories.models import Memory
from apps.memories.store.editing import MAX_MEMORY_CHARS


def _any(label: str, values: Any) -> list[tuple[str, str]]:
    return [("", label), *((value, value) for value in values)]


class ContactFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    stage = forms.ChoiceField(required=False, choices=_any("any stage", STAGES))
    mood = forms.ChoiceField(required=False, choices=_any("any mood", sorted(MOODS)))
    churn = forms.ChoiceField(
        required=False,
        choices=[("", "any churn risk"), *((bucket, f"{bucket} churn risk") for bucket in CHURN_BUCKETS)],
    )
    seen = forms.ChoiceField(
        required=False,
        choices=[
            ("", "seen any time"),
            *((window, f"seen in the last {window}") for window in SEEN_WINDOWS),
            (SEEN_OLDER, "not seen for 30d+"),
            (SEEN_NEVER, "never seen"),
        ],
    )

    def filters(self) -> dict[str, str]:
        """The valid filters; an invalid choice (a hand-edited URL) is ignored rather than an error."""
        if self.is_valid():
            data = self.cleaned_data
        else:
            data = {name: value for name, value in self.cleaned_data.items() if name not in self.errors}
        return {
            "search": data.get("q", "") or "",
            "stage": data.get("stage", "") or "",
            "mood": data.get("mood", "") or "",
            "churn": data.get("churn", "") or "",
            "seen": data.get("seen", "") or "",
        }


class ContextPreviewForm(forms.Form):
    """The same inputs as GET /context, under the same names: `query`, an optional `token_budget` (default:
    the stage's) and `as_of` (default now; without an offset, UTC), so a preview's URL reads like the API call it
    previews."""

    query = forms.CharField(required=False, max_length=4000, label="Query")
    token_budget = forms.IntegerField(
        required=False, min_value=0, max_value=32000, label="Token budget", help_text="empty: the stage's budget"
    )
    as_of = forms.DateTimeField(required=False, label="As of (UTC)", help_text="empty: now")


class MemoryEditForm(forms.Form):
    content = forms.CharField(max_length=MAX_MEMORY_CHARS, widget=forms.Textarea(attrs={"rows": 3}))
    importance = forms.FloatField(min_value=0.0, max_value=1.0, widget=forms.NumberInput(attrs={"step": "0.01"}))

    def changes(self, memory: Memory) -> dict[str, Any]:
        """Only what was changed: an untouched importance must not restart the memory's decay clock."""
        changes: dict[str, Any] = {}
        if self.cleaned_data["content"].strip() != memory.content:
            changes["content"] = self.cleaned_data["content"]
        if abs(self.cleaned_data["importance"] - memory.importance) >= 0.005:
            changes["importance"] = self.cleaned_data["importance"]
        return changes


class MemoryCorrectForm(forms.Form):
    content = forms.CharField(
        max_length=MAX_MEMORY_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "What is true now"}),
        label="Corrected content",
    )


class DocumentUploadForm(forms.Form):
    title = forms.CharField(max_length=300)
    file = forms.FileField(required=False, help_text="a .txt or .md file (at most 2 MB)")
    content = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 5}), label="…or paste text")
    content_type = forms.ChoiceField(choices=[(kind, kind) for kind in ALLOWED_CONTENT_TYPES], initial="text/markdown")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("file")
        if upload is not None:
            limit = int(settings.ENGRAM["MAX_DOCUMENT_BYTES"])
            if upload.size > limit:
                raise forms.ValidationError(f"The file is {upload.size} bytes; the limit is {limit} bytes (2 MB).")
            try:
                data["content"] = uploaded_text(upload.read(), field="file", declared_charset=upload.charset)
            except ApplicationError as error:
                raise forms.ValidationError(error.message) from None
        if not (data.get("content") or "").strip():
            raise forms.ValidationError("Upload a file or paste some text.")
        return data


class KnowledgeSearchForm(forms.Form):
    q = forms.CharField(max_length=4000, label="Search the knowledge base")
    top_k = forms.IntegerField(required=False, min_value=1, max_value=50, initial=5)
