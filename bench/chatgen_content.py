"""What bench/chatgen.py says: the kinds of fact it plants (how each is told, asked about and imitated), the small
talk around them, and the names. Written for this benchmark; every template is in this file."""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = [
    "Ines", "Tomasz", "Priya", "Kwame", "Lena", "Mateo", "Yuki", "Dara", "Olu", "Freya", "Ravi", "Sana", "Jonah",
    "Amara", "Felix", "Noor", "Bram", "Ximena", "Kai", "Maren", "Tariq", "Elif", "Soren", "Zainab",
]  # fmt: skip
_RELATIVES = ["my cousin", "my coworker", "my neighbour", "my sister", "my brother", "my roommate", "my boss",
              "my friend from uni", "my aunt", "my landlord"]  # fmt: skip


def third_parties() -> list[str]:
    """The people outside the chat that look-alike facts are about."""
    return _RELATIVES


@dataclass(frozen=True)
class FactKind:
    """One kind of fact: the values it takes, how it is told in chat, how a user asks about it, and how the same
    kind of fact about someone else sounds (a hard negative). `{value}` is the fact; `{who}` someone else."""

    name: str
    values: tuple[str, ...]
    statements: tuple[str, ...]
    # A friend's question, and replies to it; a reply is whole when it says what the value is (not just "yess X").
    asks: tuple[str, ...]
    replies: tuple[tuple[str, bool], ...]
    others: tuple[str, ...]
    question: str
    when_question: str = ""
    pair_question: str = ""
    updates: tuple[str, ...] = ()
    their: str = "their"

    def pick(self, rng: random.Random) -> str:
        return rng.choice(self.values)

    def render(self, template: str, slots: dict[str, str]) -> str:
        return template.format(**slots)


def _kind(name: str, values: str, **parts: object) -> FactKind:
    return FactKind(name=name, values=tuple(v.strip() for v in values.split(",")), **parts)  # type: ignore[arg-type]


FACTS: list[FactKind] = [
    _kind(
        "dog",
        "Mochi, Biscuit, Pepper, Rufus, Nacho, Olive, Ziggy, Waffles",
        statements=(
            "omg we got a puppy!! hes called {value}",
            "meet {value}, our new pupper",
            "so we adopted a dog from the shelter, {value}, shes a mess already",
        ),
        asks=("did u guys name the puppy yet", "whats the pup called??"),
        replies=(
            ("yess {value}", False),
            ("{value}!! the kids picked it", False),
            ("we went w {value} for the dog", True),
        ),
        others=("{who} got a puppy too, named it {value}", "{who}s dog {value} bit the mailman again"),
        question="What is the name of {who}'s dog?",
        when_question="When did {who} get the dog?",
        pair_question="What are the names of {a}'s and {b}'s dogs?",
    ),
    _kind(
        "job",
        "Fernhill Bakery, the Harbor Clinic, Lumen Studios, the city library, Northgate Motors, a vet practice",
        statements=(
            "got the job at {value}!!! start monday",
            "officially working at {value} now",
            "signed the contract w {value} today",
        ),
        asks=("so where r u working now", "any news on the job thing?"),
        replies=(("{value}, started last week", True), ("{value} finally", False), ("they hired me at {value}", True)),
        others=("{who} just started at {value} lol small world", "{who} quit {value} after two days"),
        question="Where does {who} work?",
        when_question="When did {who} get the job?",
        updates=("quit my job, starting at {value} in two weeks", "new job!! moving over to {value}"),
    ),
    _kind(
        "class",
        "pottery, salsa, bouldering, life drawing, beginner japanese, sourdough baking, improv",
        statements=("signed up for a {value} class on thursdays", "first {value} lesson tonight im nervous"),
        asks=("what was that class u signed up for", "how was the class"),
        replies=(("{value}! its so fun", False), ("the {value} class was amazing", True)),
        others=("{who} is doing {value} too apparently", "{who} dropped out of {value} lol"),
        question="What class did {who} sign up for?",
        when_question="When did {who} start the class?",
        pair_question="Which classes are {a} and {b} taking?",
    ),
    _kind(
        "trip",
        "Lisbon, Oaxaca, Kyoto, Reykjavik, Tbilisi, Marrakech, Hanoi, Tromso",
        statements=("booked flights to {value}!!", "ok {value} in april is happening"),
        asks=("where r u going for the holiday", "did u decide on the trip"),
        replies=(("{value} baby", False), ("flying to {value} in april", True)),
        others=("{who} is going to {value} too", "{who} hated {value} tho"),
        question="Where is {who} travelling to on holiday?",
        when_question="When did {who} book the holiday?",
        pair_question="Where are {a} and {b} going on holiday?",
    ),
    _kind(
        "car",
        "a blue Corolla, an old red Vespa, a white van, a green Fiat 500, a cargo bike",
        statements=("bought {value} today", "finally got wheels, {value} lol"),
        asks=("so what did u end up buying", "did u get the car"),
        replies=(("{value}", False), ("went w {value}, picked it up sat", True)),
        others=("{who} is selling {value} if ur interested", "{who} crashed {value} again"),
        question="What vehicle did {who} buy?",
        when_question="When did {who} buy the vehicle?",
        updates=("sold the old one, got {value} now",),
    ),
    _kind(
        "allergy",
        "peanuts, shellfish, cats, penicillin, kiwi, sesame",
        statements=("turns out im allergic to {value}", "doc says its a {value} allergy"),
        asks=("what did the allergy test say", "so what r u allergic to"),
        replies=(("{value} apparently", False), ("allergic to {value}, who knew", True)),
        others=("{who} is allergic to {value} too", "{who} had a reaction to {value} at the wedding"),
        question="What is {who} allergic to?",
        pair_question="What are {a} and {b} allergic to?",
    ),
    _kind(
        "move",
        "Riverside, the Old Town, Hillcrest, the docks area, Southfield, Maple Heights",
        statements=("we're moving to {value} next month", "found a flat in {value}!!"),
        asks=("where's the new place", "did u find an apartment"),
        replies=(("{value}, near the park", False), ("a flat in {value}", True)),
        others=("{who} lives in {value} now", "{who} says {value} is too loud"),
        question="Which neighbourhood is {who} moving to?",
        when_question="When did {who} find the new flat?",
        updates=("change of plans, moving to {value} instead",),
    ),
    _kind(
        "instrument",
        "the cello, the ukulele, drums, the saxophone, the banjo, piano",
        statements=("started learning {value} lol my neighbours hate me", "bought {value} and im taking lessons"),
        asks=("what r u learning again", "how are the lessons going"),
        replies=(("{value}, slowly", False), ("practising {value} every night", True)),
        others=("{who} plays {value} in a band", "{who} sold {value} for beer money"),
        question="What instrument is {who} learning?",
        pair_question="Which instruments do {a} and {b} play?",
    ),
    _kind(
        "show",
        "Severance, Slow Horses, Bluey, The Bear, Dark, Shogun, Taskmaster",
        statements=("binged all of {value} this weekend no regrets", "{value} is the best thing on tv rn"),
        asks=("what r u watching these days", "any good series?"),
        replies=(("{value}!!!", False), ("obsessed w {value} rn", True)),
        others=("{who} keeps telling me to watch {value}", "{who} thinks {value} is overrated"),
        question="Which TV series did {who} binge-watch?",
    ),
    _kind(
        "injury",
        "fell off the ladder, slipped on ice, tripped at football, twisted it dancing, missed a step",
        statements=("sprained my ankle, {value}", "ankle is huge bc i {value} 😭"),
        asks=("wait what happened to ur ankle", "why r u limping"),
        replies=(("{value} lol", False), ("sprained it, {value}", True)),
        others=("{who} hurt their knee, {value}", "{who} broke a wrist, {value}"),
        question="How did {who} hurt their ankle?",
        when_question="When did {who} sprain their ankle?",
    ),
    _kind(
        "party",
        "the rooftop bar, Luigi's, the bowling alley, my parents' garden, the karaoke place",
        statements=("bday drinks at {value} on saturday, come!!", "my birthday thing is at {value}"),
        asks=("where's the bday thing", "where r we celebrating"),
        replies=(("{value} at 8", False), ("party is at {value}", True)),
        others=("{who} had their birthday at {value}", "{who} got kicked out of {value} lmao"),
        question="Where is {who}'s birthday party?",
    ),
    _kind(
        "sport",
        "the Otters, Red Lions, the Night Owls, Tuesday Strikers, the Gnomes",
        statements=("joined a five a side team, we're called {value}", "first match w {value} tonight"),
        asks=("whats ur team called again", "how did the match go"),
        replies=(("{value} lol dont laugh", False), ("{value} lost 3-1 but i scored", True)),
        others=("{who} plays for {value}", "{who}s team {value} won the league"),
        question="What is the name of {who}'s football team?",
        pair_question="Which teams do {a} and {b} play for?",
    ),
    _kind(
        "gift",
        "a record player, a tent, a telescope, an espresso machine, a kayak",
        statements=("got my dad {value} for his 60th", "ordered {value} as the anniversary present"),
        asks=("what did u get ur dad in the end", "did u sort the present"),
        replies=(("{value}!", False), ("went w {value} for him", True)),
        others=("{who} got {value} as a present", "{who} returned {value}"),
        question="What present did {who} buy for their dad?",
    ),
    _kind(
        "diet",
        "vegan, vegetarian, gluten free, no sugar, pescatarian",
        statements=("going {value} this month, wish me luck", "im {value} now btw"),
        asks=("r u still doing the food thing", "whats the new diet"),
        replies=(("{value}, 3 weeks in", False), ("yep {value} still", True)),
        others=("{who} went {value} too", "{who} gave up on {value} after a day"),
        question="What diet is {who} following?",
    ),
    _kind(
        "book",
        "Piranesi, Dune, Circe, Educated, The Overstory, Pachinko",
        statements=("book club picked {value}, reading it now", "cant put {value} down"),
        asks=("what r u reading", "what's the book club doing"),
        replies=(("{value}, its so good", False), ("reading {value} for book club", True)),
        others=("{who} lent me {value}", "{who} hated {value}"),
        question="Which book is {who} reading?",
        pair_question="Which books are {a} and {b} reading?",
    ),
]


# Small talk: a few thousand distinct messages from these pieces, some using the facts' words.
_REACTIONS = ["lol", "haha", "omg", "noo", "yesss", "same", "ikr", "wait what", "ok", "fair", "true", "ugh", "nice",
              "lmaooo", "stoppp", "😂", "💀", "❤️", "👀", "yep", "nah", "hmm", "oh no", "wow", "aww"]  # fmt: skip
_DAILY = [
    "{food} for dinner again", "running {n} min late sorry", "traffic is insane today", "so tired today",
    "cant sleep", "its raining again", "work was long", "this job is killing me", "the dog next door wont stop "
    "barking", "gym later?", "need coffee", "my phone is dying", "forgot my keys again", "laundry day ugh",
    "on the bus", "just got home", "at the shop, need anything?", "cooking {food}", "craving {food}",
    "boss is being weird", "meeting ran over", "the heating is broken again", "class was cancelled",
    "cleaned the whole flat", "train delayed again", "watching something dumb", "back from the walk",
    "neighbours are having a party", "holiday cant come soon enough", "going to bed early",
    "did the weekly shop", "lunch was so good", "my back hurts", "car wont start", "bought too many snacks",
    "the kids are feral today", "payday finally", "printer jammed again", "so bored at work",
]  # fmt: skip
_ASKS = ["u up?", "what r u doing later", "free this weekend?", "did u see my message", "how was ur day",
         "wanna get food", "call later?", "where r u", "did u eat", "how's work", "u ok?",
         "what time tmrw", "coming saturday?", "are we still on for friday"]  # fmt: skip
_ANSWERS = ["yeah", "not really", "maybe later", "sure", "cant tonight", "yes!!", "at home", "all good", "nope",
            "busy till 6", "sounds good", "in a bit", "tired but ok", "lemme check"]  # fmt: skip
_FOODS = ["pasta", "tacos", "ramen", "pizza", "curry", "toast", "soup", "dumplings", "salad", "noodles"]


_OPENERS = ["", "", "", "ugh", "ok so", "honestly", "btw", "lol", "omg", "wait", "hmm", "fyi", "god"]
_TAILS = ["", "", "", "today", "again", "rn", "this morning", "tonight", "lol", "!!", "...", "tbh", "i swear",
          "as usual", "for once", "smh", "send help", "hahah"]  # fmt: skip
_PLACES = ["the office", "the station", "my mums", "the gym", "tescos", "the pub", "the park", "uni", "the dentist"]
_DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "the weekend"]


def filler_exchange(rng: random.Random, n: int) -> list[str]:
    """`n` messages of small talk by one speaker: reactions repeat, as in any chat; the rest is pieced together
    from an opener, a remark and a tail, so few messages are said twice word for word."""
    out: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.25:
            out.append(rng.choice(_REACTIONS))
            continue
        if roll < 0.75:
            core = rng.choice(_DAILY).format(food=rng.choice(_FOODS), n=rng.choice((5, 10, 15, 20, 30)))
            if rng.random() < 0.3:
                core += rng.choice((f" at {rng.choice(_PLACES)}", f" till {rng.choice(_DAYS)}", " all day"))
        elif roll < 0.9:
            core = rng.choice(_ASKS)
            if rng.random() < 0.3:
                core = core.rstrip("?") + f" {rng.choice(_DAYS)}?"
        else:
            core = rng.choice(_ANSWERS)
        out.append(" ".join(p for p in (rng.choice(_OPENERS), core, rng.choice(_TAILS)) if p))
    return out
