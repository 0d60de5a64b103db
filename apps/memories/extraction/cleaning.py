"""Low-content detection (contact-intelligence §3.1); the text cleaning it relies on (memory-logic §1.2) is
`apps.core.cleaning.clean_text`, shared with the knowledge base.

Pure functions: no ORM, no I/O.
"""

from __future__ import annotations

import re

from apps.core.cleaning import clean_text

_REPEATS = re.compile(r"(.)\1+")


def _collapse_repeats(word: str) -> str:
    # "okkkk", "hmmmm", "yesss", "nooo" and "ok", "hm", "yes", "no" compare equal after this
    return _REPEATS.sub(r"\1", word)


_FILLER_WORDS = """
    lol lolz lmao lmfao rofl ok okay okey okie oki k kk hmm hm mhm mm uh uhh um umm er erm ah aha oh ooh
    wow whoa woah yay woo woohoo haha hehe heh yes yeah yea ya yah yep yup sure no nope nah na thanks thank
    thx thnx tnx ty tysm tyvm np yw cool nice great awesome alright aight fine good perfect exactly indeed
    definitely totally absolutely right true same ikr idk dunno maybe hi hello hey heya hiya yo sup bye
    goodbye cya gn gm lmk brb omg omfg ugh meh pfft hmph welcome please pls plz sorry soz noted agreed
    really seriously wait huh what why so and but well anyway anyways lovely sweet neat gotcha kinda sorta
    bruh dude man ttyl nite night morning mornin evening damn dang xoxo xo xx
    congrats congratulations amazing incredible fantastic wonderful brilliant excellent impressive gorgeous
    beautiful fabulous superb stunning glad happy proud cheers anytime bravo hooray yikes oops whoops gosh aw
    that that's it it's sounds looks so very such too you
"""
_FILLER_PHRASES = """
    thank you|thank u|thanks a lot|got it|sounds good|no worries|no problem|of course|i see|me too|same here
    all good|fair enough|good morning|good night|good evening|good afternoon|see you|see ya|talk later|you too
    i know|for sure|oh well|oh no|not bad|i guess|makes sense|that's fine|that's ok|that's okay|that's cool
    that's great|that's nice|it's ok|it's okay|it's fine|no thanks|not really|why not|sure thing|will do
    ok then|okay then|you're welcome|my bad|thank you so much|thanks so much
    nice to hear from you|good to hear from you|great to hear from you|good to hear|great to hear|nice to hear
    glad to hear|sorry to hear|long time no see|long time no talk|talk soon|talk to you soon|talk to you later
    speak soon|catch you later|see you soon|see you later|take care|keep it up|keep going|way to go|well done
    good job|great job|nice one|nice work|good luck|best of luck|have fun|have a good one|have a great one
    have a great day|have a good day|have a good night|stay safe|stay awesome|rock on|you got this
    you've got this|means a lot|appreciate it|much appreciated|i appreciate it|happy for you|proud of you
    miss you|love you|can't wait|good talking to you|great talking to you|great catching up|nice chatting
    bye for now|here for you|sounds like fun|looks like fun|so glad
    love that|love it|love this|night night|nighty night|sweet dreams|sleep well|sleep tight|good one
"""
_LOW_CONTENT_WORDS = frozenset(_collapse_repeats(word) for word in _FILLER_WORDS.split())
_LOW_CONTENT_PHRASES = re.compile(
    r"\b(?:"
    + "|".join(
        re.escape(_collapse_repeats(phrase.strip()))
        for phrase in sorted(_FILLER_PHRASES.replace("\n", "|").split("|"), key=len, reverse=True)
        if phrase.strip()
    )
    + r")\b"
)
_LAUGHTER = re.compile(
    r"^(?:a?(?:ha)+h?|(?:he)+h?|(?:hi){2,}|(?:ja)+|l(?:ol)+z?|lm(?:f)?ao|rofl|xd|(?:ah)+a?|(?:lo)+l)$"
)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

# What a messaging app's chat export writes where a message held no text: a shared photo, voice note or
# sticker ("<Media omitted>" on Android's WhatsApp, "image omitted" on the iPhone's), a deleted message, a
# missed call, the encryption notice. A placeholder repeated in every session was one more episode that
# near-duplicate merging folded into one naming hundreds of turns (docs/benchmarks.md, Session 34).
_EXPORT_PLACEHOLDER = re.compile(
    r"""
    <\s*media\s+omitted\s*>
    | <[^<>\n]{1,60}\bomitted\s*>
    | <attached:\s*[^<>\n]{1,200}>
    | (?:image|photo|picture|video|audio|voice\s+message|voice\s+note|sticker|gif|document|file|contact\s+card
       |location|view\s+once\s+message)\s+omitted
    | \[(?:photo|image|picture|video|audio|voice\s+message|voice\s+note|sticker|gif|attachment|file|media|document
         |location|contact)s?\]
    | this\s+message\s+was\s+deleted | you\s+deleted\s+this\s+message | message\s+deleted
    | missed\s+(?:group\s+)?(?:voice|video)\s+call
    | messages\s+and\s+calls\s+are\s+end-to-end\s+encrypted\b.*
    | (?:you\s+)?sent\s+an?\s+(?:photo|picture|attachment|video|sticker|gif|voice\s+message)
    """,
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)
# invisible direction marks an export puts before a placeholder ("\u200eimage omitted") or anywhere in a line,
# and zero-width spaces; not the joiners (U+200C, U+200D), which are part of a word or an emoji ("👨‍👩‍👧")
_INVISIBLE = re.compile(r"[\u200b\u200e\u200f\u2060\u202a-\u202e\u2066-\u2069\ufeff]")
# WhatsApp appends this to an edited message's text
_EDITED_MARK = re.compile(r"\s*<\s*this message was edited\s*>\s*$", re.IGNORECASE)


def export_marks_removed(text: str) -> str:
    """The text without what a chat export adds to a message: invisible direction marks and the "<This
    message was edited>" note at its end."""
    return _EDITED_MARK.sub("", _INVISIBLE.sub("", text))


def is_export_placeholder(text: str) -> bool:
    """Is the whole message what a chat export writes in place of one that held no text ("<Media omitted>",
    "image omitted", "This message was deleted", "Missed voice call", "[Photo]")?"""
    return bool(_EXPORT_PLACEHOLDER.fullmatch(export_marks_removed(text).strip().rstrip(".")))


def is_low_content(text: str) -> bool:
    """True when a turn carries nothing worth remembering: acknowledgements, laughter, greetings,
    emoji or punctuation only ("lol", "ok sure", "👍", "???"), or a chat export's placeholder for a message
    without text ("<Media omitted>", "This message was deleted"). Any other word, or any digit, makes the
    turn meaningful."""
    if is_export_placeholder(text):
        return True
    folded = clean_text(text).lower().replace("\u2019", "'")
    words = _WORD.findall(folded)
    if not words:
        return True  # emoji, punctuation or whitespace only
    # a word of letters only has no digit (no character is both): only the others are read character by character
    if any(not word.isalpha() and any(character.isdigit() for character in word) for word in words):
        return False
    # the words collapsed in one pass: joined by single spaces, no run of a repeated character crosses two words
    remainder = _LOW_CONTENT_PHRASES.sub(" ", _collapse_repeats(" ".join(words)))
    return all(word in _LOW_CONTENT_WORDS or _LAUGHTER.match(word) for word in remainder.split())
