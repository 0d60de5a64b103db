"""Labelled messages for the keyword mood classifier.

LABELLED_MOODS is the table the tests assert one by one (so the classifier scores 100% on it by construction);
it pins the documented rules: negation, word boundaries, emoji, intensity. CHALLENGE_MOODS are realistic messages
labelled by what a person would say, including ones keywords cannot get right (sarcasm, negation after the
cue, feelings without cue words); a benchmark prints accuracy on both so the fallback's limits stay visible.
"""

from __future__ import annotations

from typing import NamedTuple


class LabelledMood(NamedTuple):
    text: str
    mood: str
    energy: str


LABELLED_MOODS: tuple[LabelledMood, ...] = (
    # happy
    LabelledMood("haha that's hilarious", "happy", "high"),
    LabelledMood("lol", "happy", "high"),
    LabelledMood("😂😂😂", "happy", "high"),
    LabelledMood("That concert was amazing", "happy", "high"),
    LabelledMood("I'm so happy today", "happy", "high"),
    LabelledMood("hahaha you're the best 😄", "happy", "high"),
    LabelledMood("happy but so tired after the party", "happy", "medium"),
    LabelledMood("I'm not sad anymore, actually glad it happened", "happy", "high"),
    # sad
    LabelledMood("I'm feeling sad today", "sad", "low"),
    LabelledMood("I've been crying all night", "sad", "low"),
    LabelledMood("I miss my grandma", "sad", "low"),
    LabelledMood("😢", "sad", "low"),
    LabelledMood("I'm not happy", "sad", "low"),
    LabelledMood("honestly not happy with how things are going", "sad", "low"),
    LabelledMood("I'm so sad and lonely!!", "sad", "medium"),
    LabelledMood("WHY DOES EVERYONE LEAVE ME, I'M SO SAD", "sad", "medium"),
    LabelledMood("heartbroken 💔", "sad", "low"),
    LabelledMood("my dog passed away this morning", "sad", "low"),
    # anxious
    LabelledMood("I'm worried about my exam", "anxious", "low"),
    LabelledMood("so nervous for the interview tomorrow", "anxious", "low"),
    LabelledMood("my anxiety is through the roof", "anxious", "low"),
    LabelledMood("I'm freaking out about the deadline 😰", "anxious", "low"),
    LabelledMood("I'm terrified!!", "anxious", "medium"),
    # excited
    LabelledMood("I can't wait for the trip", "excited", "high"),
    LabelledMood("I got the job!!! 🎉", "excited", "high"),
    LabelledMood("so excited for tomorrow", "excited", "high"),
    LabelledMood("we're going to Japan!!!", "excited", "high"),
    LabelledMood("I\u2019m so pumped, let's go", "excited", "high"),
    # angry
    LabelledMood("I'm so angry right now", "angry", "high"),
    LabelledMood("I'm furious with my landlord", "angry", "high"),
    LabelledMood("I hate this", "angry", "high"),
    LabelledMood("😡", "angry", "high"),
    LabelledMood("I'm mad at my brother", "angry", "high"),
    # frustrated
    LabelledMood("ugh", "frustrated", "medium"),
    LabelledMood("this is so annoying", "frustrated", "medium"),
    LabelledMood("I'm frustrated with this app", "frustrated", "medium"),
    LabelledMood("UGH IT STILL DOESN'T WORK", "frustrated", "high"),
    LabelledMood("I'm fed up with my commute 😤", "frustrated", "medium"),
    LabelledMood("the app keeps crashing!!", "frustrated", "high"),
    # bored
    LabelledMood("I'm bored", "bored", "low"),
    LabelledMood("meh", "bored", "low"),
    LabelledMood("whatever", "bored", "low"),
    LabelledMood("nothing to do today 🥱", "bored", "low"),
    LabelledMood("this lecture is boring", "bored", "low"),
    # grateful
    LabelledMood("thank you so much", "grateful", "medium"),
    LabelledMood("I really appreciate your help", "grateful", "medium"),
    LabelledMood("so grateful for you 🙏", "grateful", "medium"),
    LabelledMood("thanks, that means a lot", "grateful", "medium"),
    # confused
    LabelledMood("I'm confused", "confused", "medium"),
    LabelledMood("what do you mean?", "confused", "medium"),
    LabelledMood("I don't understand the question", "confused", "medium"),
    LabelledMood("🤔", "confused", "medium"),
    LabelledMood("that makes no sense", "confused", "medium"),
    # flirty
    LabelledMood("you're so cute 😘", "flirty", "medium"),
    LabelledMood("hey cutie", "flirty", "medium"),
    LabelledMood("are you flirting with me 😉", "flirty", "medium"),
    # negations and non-matches -> neutral
    LabelledMood("I'm not sad", "neutral", "medium"),
    LabelledMood("I'm not worried about it", "neutral", "medium"),
    LabelledMood("not bored at all", "neutral", "medium"),
    LabelledMood("I don't hate it", "neutral", "medium"),
    LabelledMood("no worries", "neutral", "medium"),
    LabelledMood("don't worry about it", "neutral", "medium"),
    LabelledMood("never been worried about that", "neutral", "medium"),
    LabelledMood("I missed the bus", "neutral", "medium"),
    LabelledMood("let's dismiss that idea", "neutral", "medium"),
    LabelledMood("I bought a lollipop", "neutral", "medium"),
    LabelledMood("what time is the meeting", "neutral", "medium"),
    LabelledMood("ok", "neutral", "medium"),
    LabelledMood("", "neutral", "medium"),
    LabelledMood("I'm so exhausted", "neutral", "low"),
    LabelledMood("no thanks", "neutral", "medium"),
    # mixed
    LabelledMood("not sad, just bored", "bored", "low"),
    LabelledMood("haha but honestly I'm worried", "anxious", "low"),
)

CHALLENGE_MOODS: tuple[LabelledMood, ...] = (
    LabelledMood("oh great, another Monday", "frustrated", "medium"),  # sarcasm
    LabelledMood("Bored? Not at all!", "neutral", "medium"),  # negation after the cue
    LabelledMood("my boss yelled at me again and I just sat there", "sad", "low"),  # no cue word
    LabelledMood("I finally finished my thesis", "happy", "high"),  # no cue word
    LabelledMood("can you help me with my resume", "neutral", "medium"),
    LabelledMood("I got promoted today!!", "excited", "high"),  # no cue word
    LabelledMood("It's fine. Everything is fine.", "sad", "low"),  # masked feeling
    LabelledMood("idk what you're saying", "confused", "medium"),
    LabelledMood("lol I'm so done with everyone", "frustrated", "medium"),
    LabelledMood("missing you tonight 😘", "flirty", "medium"),
    LabelledMood("I can't stop smiling today", "happy", "high"),
    LabelledMood("I'm so stressed about money", "anxious", "low"),
    LabelledMood("thanks a lot for nothing", "angry", "high"),  # sarcasm
    LabelledMood("meh, the movie was alright", "bored", "low"),
    LabelledMood("I'm not excited about the move", "sad", "low"),
    LabelledMood("You're amazing, thank you so much!", "grateful", "high"),
    LabelledMood("ugh my train is late again", "frustrated", "medium"),
    LabelledMood("I don't feel like doing anything today", "bored", "low"),
    LabelledMood("can't believe she said yes!!! 💍", "excited", "high"),
    LabelledMood("I'm scared I'll fail again", "anxious", "low"),
    LabelledMood("you always know what to say, thank you", "grateful", "medium"),
    LabelledMood("why would you even say that to me", "angry", "high"),
    LabelledMood("nah I'm good, not worried", "neutral", "medium"),
    LabelledMood("feeling a bit down since the breakup", "sad", "low"),
)
