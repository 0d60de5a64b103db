"""Word lists used by several rule families: relation and pet words with their canonical forms, the
kinship and pet pattern fragments, nationalities and faiths, and the common English words that keep
sentence openers from being read as names (docs/extraction.md, "Entities").
"""

from __future__ import annotations

from apps.memories.extraction.rules._text import _alternation, _words

# relation word as said -> canonical relation (metadata and slot)
_RELATION_CANONICAL = {
    "wife": "wife",
    "wifey": "wife",
    "husband": "husband",
    "hubby": "husband",
    "partner": "partner",
    "spouse": "spouse",
    "boyfriend": "boyfriend",
    "girlfriend": "girlfriend",
    "gf": "girlfriend",
    "fiance": "fiance",
    "fiancé": "fiance",
    "fiancee": "fiance",
    "fiancée": "fiance",
    "mom": "mom",
    "mum": "mom",
    "mother": "mom",
    "mommy": "mom",
    "mummy": "mom",
    "mama": "mom",
    "dad": "dad",
    "father": "dad",
    "daddy": "dad",
    "papa": "dad",
    "stepmom": "stepmom",
    "stepmother": "stepmom",
    "stepdad": "stepdad",
    "stepfather": "stepdad",
    "mother-in-law": "mother-in-law",
    "father-in-law": "father-in-law",
    "boss": "boss",
    "manager": "manager",
    "best friend": "best friend",
    "bestie": "best friend",
    "bff": "best friend",
    "therapist": "therapist",
    "mentor": "mentor",
    "landlord": "landlord",
    "son": "son",
    "daughter": "daughter",
    "kid": "child",
    "child": "child",
    "baby": "baby",
    "sister": "sister",
    "brother": "brother",
    "sibling": "sibling",
    "twin": "twin",
    "cousin": "cousin",
    "aunt": "aunt",
    "auntie": "aunt",
    "uncle": "uncle",
    "niece": "niece",
    "nephew": "nephew",
    "grandma": "grandma",
    "grandmother": "grandma",
    "granny": "grandma",
    "nana": "grandma",
    "grandpa": "grandpa",
    "grandfather": "grandpa",
    "granddad": "grandpa",
    "grandson": "grandson",
    "granddaughter": "granddaughter",
    "stepson": "stepson",
    "stepdaughter": "stepdaughter",
    "stepsister": "stepsister",
    "stepbrother": "stepbrother",
    "sister-in-law": "sister-in-law",
    "brother-in-law": "brother-in-law",
    "friend": "friend",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
    "roommate": "roommate",
    "flatmate": "roommate",
    "neighbour": "neighbour",
    "neighbor": "neighbour",
    "teacher": "teacher",
    "doctor": "doctor",
    "coach": "coach",
    "classmate": "classmate",
    "tutor": "tutor",
    "ex": "ex",
    "ex-wife": "ex-wife",
    "ex-husband": "ex-husband",
    "ex-boyfriend": "ex-boyfriend",
    "ex-girlfriend": "ex-girlfriend",
}
# One person at a time: a newer "my manager is X" supersedes the older one (slot relation:<canonical>).
_SINGLE_RELATIONS = frozenset(
    {
        "wife",
        "husband",
        "partner",
        "spouse",
        "boyfriend",
        "girlfriend",
        "fiance",
        "mom",
        "dad",
        "stepmom",
        "stepdad",
        "mother-in-law",
        "father-in-law",
        "boss",
        "manager",
        "best friend",
        "therapist",
        "mentor",
        "landlord",
    }
)
_RELATION_MODIFIERS = ("older", "younger", "little", "big", "baby", "twin", "elder", "kid")

_SPECIES_CANONICAL = {
    "dog": "dog",
    "doggo": "dog",
    "doggy": "dog",
    "pup": "dog",
    "puppy": "dog",
    "cat": "cat",
    "kitten": "cat",
    "kitty": "cat",
    "rabbit": "rabbit",
    "bunny": "rabbit",
    "bird": "bird",
    "parrot": "bird",
    "budgie": "bird",
    "cockatiel": "bird",
    "canary": "bird",
    "fish": "fish",
    "goldfish": "fish",
    "betta": "fish",
    "hamster": "hamster",
    "guinea pig": "guinea pig",
    "turtle": "turtle",
    "tortoise": "tortoise",
    "snake": "snake",
    "lizard": "lizard",
    "gecko": "lizard",
    "iguana": "lizard",
    "horse": "horse",
    "pony": "horse",
    "ferret": "ferret",
    "rat": "rat",
    "mouse": "mouse",
    "chicken": "chicken",
    "hen": "chicken",
    "goat": "goat",
    "pig": "pig",
}
_BREED_SPECIES = {
    "golden retriever": "dog",
    "labrador": "dog",
    "retriever": "dog",
    "beagle": "dog",
    "poodle": "dog",
    "pug": "dog",
    "husky": "dog",
    "german shepherd": "dog",
    "bulldog": "dog",
    "french bulldog": "dog",
    "dachshund": "dog",
    "corgi": "dog",
    "chihuahua": "dog",
    "terrier": "dog",
    "spaniel": "dog",
    "shih tzu": "dog",
    "pomeranian": "dog",
    "rottweiler": "dog",
    "doberman": "dog",
    "dalmatian": "dog",
    "great dane": "dog",
    "border collie": "dog",
    "collie": "dog",
    "schnauzer": "dog",
    "maltese": "dog",
    "yorkie": "dog",
    "pitbull": "dog",
    "pit bull": "dog",
    "greyhound": "dog",
    "whippet": "dog",
    "samoyed": "dog",
    "akita": "dog",
    "shiba inu": "dog",
    "shiba": "dog",
    "cockapoo": "dog",
    "labradoodle": "dog",
    "goldendoodle": "dog",
    "siamese": "cat",
    "maine coon": "cat",
    "ragdoll": "cat",
    "bengal": "cat",
    "sphynx": "cat",
    "tabby": "cat",
}


_RELATION_RE = (
    rf"(?:(?:{'|'.join(_RELATION_MODIFIERS)})[\s-])?(?:{_alternation(_RELATION_CANONICAL)})"
    r"(?!\w)"
)
_SINGLE_RELATION_WORDS = [word for word, canonical in _RELATION_CANONICAL.items() if canonical in _SINGLE_RELATIONS]
_PET_RE = rf"(?:{_alternation([*_SPECIES_CANONICAL, *_BREED_SPECIES])})(?!\w)"


_NATIONALITIES_AND_FAITHS = frozenset(
    _words("""
    american british english scottish welsh irish canadian australian indian pakistani bangladeshi
    nepali sri-lankan chinese japanese korean vietnamese thai filipino indonesian malaysian singaporean
    german french italian spanish portuguese dutch belgian swiss austrian swedish norwegian danish finnish
    polish russian ukrainian greek turkish iranian israeli egyptian nigerian kenyan ghanaian ethiopian
    south-african mexican brazilian argentinian chilean colombian peruvian cuban jamaican arab lebanese
    hindu muslim christian catholic protestant jewish buddhist sikh jain atheist agnostic punjabi tamil
    bengali gujarati marathi malayali telugu kannadiga
    """)
)


# Words that commonly open a chat sentence: capitalised there, they never start a name.
SENTENCE_STARTERS = frozenset(
    _words("""
    a an the my your our his her their its it it's this that these those there here we you he she they me us
    them i so and but or if then because since after before while though although also still even only just
    actually well now anyway besides plus okay ok yes yeah no nope maybe probably definitely really honestly
    today tonight yesterday tomorrow last next every each some any all both what why how when where who which
    whatever can could would should will did do does is are was were have has had got get went go going gonna
    wanna gotta let let's lets met saw told asked called texted watched played started finished tried cooked
    ate bought visited spent left came come took made gave found thought felt feeling thinking working hey hi
    hello thanks thank sorry please oh ah wow ugh hmm lol haha dear remember guess need want love like hate
    miss hope wish tell sounds looks seems good great nice cool sure fine happy sad not never always sometimes
    usually often again finally recently lately once twice almost about around at in on for with from to by
    of as into over under up down out off back home work school morning afternoon evening night weekend
    don't dont can't cant won't isn't aren't wasn't weren't didn't doesn't haven't hasn't hadn't couldn't
    wouldn't shouldn't i'm i've i'd i'll we're we've we'll we'd you're you've you'll they're they've that's
    there's here's what's how's where's who's he's she's it'll that'll
    whenever however whoever whichever such nevertheless hence instead perhaps indeed furthermore moreover thus
    whereas whether either neither nor yet
    """)
)

COMMON_WORDS = SENTENCE_STARTERS | frozenset(
    _words("""
    able about above accept across act add afraid age ago agree air alive allow alone along already alright
    amazing among amount angry animal another answer anybody anyone anything anywhere apart apple area arm
    army arrive art ask asleep attack aunt avoid awake away awesome awful baby bad bag ball bank bar base bath
    bathroom beach bear beat beautiful became become bed bedroom beer begin behind believe best better big
    bike bill bird birthday bit bite black blame blood blue board boat body book boring born boss bottle
    bottom box boy boyfriend brain bread break breakfast bring brother brown build building burn bus business
    busy buy cake call calm camera camp car card care career careful carry case cat catch cause center
    chair chance change cheap check cheese chicken child children chocolate choose church city class clean
    clear climb close clothes cloud club coach coat coffee cold college color colour company complete
    computer confused cook cool copy corner cost couch could count country couple course cousin cover crazy
    cream create cry cup cut cute dad daily damn dance danger dark date daughter day dead deal dear death
    decide deep delicious dentist depressed design desk dinner dirty doctor dog done door double dream dress
    drink drive drop drunk dry during early earn easy eat egg else email empty end energy enjoy enough enter
    even event ever everybody everyone everything exactly exam excited exciting exercise expect expensive
    explain eye face fact fail fair fall false family famous fan far farm fast fat father fault fear feel
    feet fell few field fight fill film find finger finish fire first fish fit fix flat floor flower fly
    follow food foot forget forgive form forward free fresh friend friendly front fruit full fun funny future
    game garden gas gave gift girl girlfriend give glad glass goal god gold golf gone gone grade grandma
    grandpa grass gray green grey group grow guess guitar guy gym hair half hall hand handle hang happen hard
    hat head health healthy hear heard heart heat heavy hell help high hill hit hobby hold hole holiday
    horse hospital hot hotel hour house huge human hungry hurry hurt husband ice idea ill important inside
    interest interested interesting island job join joke juice jump junior keep key kid kill kind king kiss
    kitchen knee knew know lady lake land language large late later laugh law lay lazy lead learn least leave
    leg less lesson letter level library lie life light line list listen little live living lonely long look
    lose lost lot loud low luck lucky lunch mad main make man manager many map mark market marry matter may
    meal mean meat medicine meet meeting member memory men message middle might mile milk mind mine minute
    mirror miss mistake mom moment money month moon more most mother mountain mouth move movie much mum
    music must name nap nature near nearly neck neighbor neighbour nervous new news nice night nobody noise
    none normal nose note nothing notice number nurse offer office old open order other outside own page
    pain paint pair pants paper parent park part party pass past pay peace people perfect person phone photo
    pick picture piece pink pizza place plan plane plant play player pleasant pocket point police pool poor
    possible post power practice present pretty price prison problem project promise proud pull push put
    quick quiet quite race rain raise rather reach read ready real reason red relax relationship rest
    restaurant rich ride right ring rise river road rock roll room rough round rule run safe salt same sand
    save say scared scary sea season seat second secret see seem sell send senior sense serious set several
    shape share sharp ship shirt shoe shoes shop short shot shoulder shout show shower shut sick side sign
    silly simple sing single sister sit size skin sky sleep sleepy slow small smart smell smile snow social
    soft someone something son song soon sort sound soup space speak special spend sport spring stand star
    start state station stay steal step stick stop store story strange street stress stressed strict strong
    student study stuff stupid style success sugar suit summer sun super support surprise sweet swim table
    take talk tall taste tea teach teacher team tear teeth terrible test text than thing think thirsty
    through throw ticket time tired together toilet tomato tone too tooth top total touch tough town toy
    train travel tree trip trouble truck true trust truth try turn type ugly uncle understand unless until
    upset use useful usual vacation visit voice wait wake walk wall war warm wash watch water way weak wear
    weather wedding week weird welcome west wet white whole wide wife wild win wind window wine winter wise
    woman women wonder wonderful word world worried worry worse worst would write wrong yard year yellow
    young youth zero answer awkward bored boring chill lit mood sick vibe vibes

    absolutely accident according actually addition adventure afternoon afterwards agreement already
    although amazingly anniversary announcement anything anywhere apartment apparently application
    appointment appreciate appreciated approach argument assignment assistant atmosphere attention audience
    available background basically beautiful beginning behaviour behavior benefits birthday boyfriend
    breakfast brilliant broadcast brothers building businesses calculate candidate celebrate celebration
    certainly challenge challenging character chocolate christmas classroom colleague colleagues comfortable
    commercial committee community companies company's completely complicated computer concerned condition
    confident confidence congratulations connection consider considering continue conversation
    conversations convenient correction countries currently customer customers dangerous daughter daughters
    decision decisions definitely delicious depressed depression description designer desperately
    different difficult dinosaur direction directly disappointed disappointing discussion distance
    documentary downstairs education electricity elsewhere emergency emotional employees encourage
    engineering entertainment environment especially essentially evening everybody everything everywhere
    exactly excellent exchange excitement exhausted expensive experience experiences explanation
    extremely fantastic favourite favorite favourites favorites financial following football forgotten
    fortunately frequently friendship furniture generally gentleman girlfriend government grandchildren
    granddaughter grandfather grandmother grandparents gratitude happiness headphones healthcare helpful
    highlight historical hospital household housework hundreds immediately important impossible impressive
    including incredible incredibly independent information ingredients instagram instructions
    intelligent interested interesting internet interview introduce invitation knowledge laughing
    literally lockdown meanwhile medication meditation mentioned midnight motivation motivated mountains
    neighborhood neighbourhood newspaper nightmare notification obviously occasionally officially
    otherwise overnight overthinking paperwork parenting particular particularly passenger performance
    personal personally perspective photograph photography physically playground political politics
    population portfolio positive possibility potential practically preparing presentation president
    pressure previously principal priorities priority privately probably problem problems procrastinating
    produce product products production professional professor programme programming progress properly
    prosperity psychology published punishment qualified questions quarantine reasonable recommend
    recommendation recommendations recently refreshing regarding regularly relationship relationships
    remember remembered reminder apologise apologize relatives religious remarkable renovation
    reservation residence responsible restaurant restaurants retirement schedule seriously situation
    situations something sometimes somewhere specifically spiritual statement stomachache strawberry
    strawberries stressful structure struggling stubborn successful suddenly suggestion summertime
    sunflower supermarket supportive surprised surprising swimming technology teenager television
    temperature terrible terribly therapist therapy thankfully thanksgiving themselves therefore
    thousands throughout tomorrow tonight tournament traditional training transport transportation
    traveling travelling treatment tremendous unbelievable uncomfortable understand understanding
    unexpected unfortunately university unusual upcoming vacation valentine vegetables vegetarian
    volunteer volunteering wednesday weekend whatever wherever wonderful workplace worthwhile yesterday
    yourself yourselves appreciate boyfriends girlfriends neighbours neighbors afternoons
    """)
)
