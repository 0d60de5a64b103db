"""Default crisis helpline guidance per locale, shared with the contact when crisis language is detected.

Tenants can override any locale. Lookup goes from the most specific locale to the least ("en-IN", then "en",
then "international"), and at each level a tenant override wins over the default. So a tenant that only sets
"en" still gets the default India text for "en-IN"; to replace it everywhere they set "en-IN" too.
"""

from __future__ import annotations

INTERNATIONAL = "international"

DEFAULT_HELPLINES: dict[str, str] = {
    INTERNATIONAL: (
        "If you are in immediate danger call your local emergency number. Find a helpline: https://findahelpline.com"
    ),
    "en": (
        "If you are in immediate danger call your local emergency number. US: call or text 988. "
        "UK & Ireland: Samaritans 116 123. India: Tele-MANAS 14416. Elsewhere: https://findahelpline.com"
    ),
    "en-US": ("Call or text 988 (Suicide & Crisis Lifeline), free and available 24/7. In immediate danger call 911."),
    "en-GB": "Call Samaritans free on 116 123, any time, day or night. In immediate danger call 999.",
    "en-IN": "Call Tele-MANAS on 14416 (free, 24/7). In immediate danger call 112.",
    "es": (
        "Si estás en peligro inmediato, llama al número de emergencias local. En España: línea 024 "
        "(gratuita, 24 h). En otros países: https://findahelpline.com"
    ),
    "hi": "अगर आप तुरंत खतरे में हैं तो 112 पर कॉल करें। Tele-MANAS: 14416 (निःशुल्क, 24x7)।",
    "pt": (
        "Se estiver em perigo imediato, ligue para o número de emergência local. Brasil: CVV 188 (24 h). "
        "Portugal: SNS 24, 808 24 24 24. Outros países: https://findahelpline.com"
    ),
    "fr": (
        "En cas de danger immédiat, appelez le 112. France : 3114 (gratuit, 24 h/24). "
        "Autres pays : https://findahelpline.com"
    ),
}


def canonical_locale(locale: str | None) -> str | None:
    """Language lower case, region upper case ("en_in" → "en-IN"); scripts dropped ("zh-Hant-TW" → "zh-TW")."""
    if not locale or not locale.strip():
        return None
    parts = [part for part in locale.strip().replace("_", "-").split("-") if part]
    language = parts[0].lower()
    regions = [part for part in parts[1:] if len(part) == 2 or part.isdigit()]
    return f"{language}-{regions[0].upper()}" if regions else language


def _lookup_chain(locale: str | None) -> list[str]:
    canonical = canonical_locale(locale)
    chain: list[str] = []
    if canonical:
        chain.append(canonical)
        language = canonical.split("-")[0]
        if language != canonical:
            chain.append(language)
    chain.append(INTERNATIONAL)
    return chain


def helpline_guidance(locale: str | None, overrides: dict[str, str] | None = None) -> str:
    """The helpline text for a contact's locale; never empty (the international text is the last resort)."""
    tenant_texts = {
        key: text for key, text in ((canonical_locale(key), text) for key, text in (overrides or {}).items()) if key
    }
    for key in _lookup_chain(locale):
        for texts in (tenant_texts, DEFAULT_HELPLINES):
            text = texts.get(key, "").strip()
            if text:
                return text
    return DEFAULT_HELPLINES[INTERNATIONAL]
