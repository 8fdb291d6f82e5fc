"""stemming.index_terms against SQLite's own FTS5 tokenizer: the in-memory index matches the terms the embedded one
indexes only if the two agree."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rearview.adapters.sqlite.schema import FTS_TOKENIZER
from rearview.stemming import index_terms
from rearview.text_analysis import index_text

pytestmark = pytest.mark.unit

# Words that take each step of the Porter stemmer (and its length limits) one way or the other.
PORTER_WORDS = (
    "caresses ponies ties caress cats sses ies feed agreed eed plastered bled motoring sing conflated troubled sized "
    "hopping tanned falling hissing fizzed failing filing ating ated yyed happy sky relational conditional rational "
    "valency hesitancy digitizer conformably radically differently vilely analogously vietnamization predication "
    "operator feudalism decisiveness hopefulness callousness formality sensitivity sensibility apology triplicate "
    "formative formalize electricity electrical hopeful goodness revival allowance inference airliner gyroscopic "
    "adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate "
    "angularity homologous effective bowdlerize probate rate cease controll roll generalizations oscillators "
    + "x"
    * 70
)


@pytest.fixture(scope="module")
def fts5() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='{FTS_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(docs, 'instance')")
    yield conn
    conn.close()


def _fts5_terms(conn: sqlite3.Connection, text: str) -> list[str]:
    """The terms FTS5 indexes for `text` as the embedded backend stores it (`index_text`), in order."""
    conn.execute("DELETE FROM docs")
    conn.execute("INSERT INTO docs(rowid, text) VALUES (1, ?)", (index_text(text),))
    return [row[0] for row in conn.execute("SELECT term FROM terms ORDER BY offset")]


@pytest.mark.parametrize(
    "text",
    [
        PORTER_WORDS,
        "Went for a long hike on Sunday; hiking again tomorrow. Dinners, dinner.",
        "café naïve Ångström straße øre œuvre résumé ﬁne ǘ ệ",
        "İstanbul ǅemal e\u0301te x\u0305y",
        "我们讨论了项目预算 明天去北京出差",
        "नमस्ते दुनिया привет мира καλημέρα κόσμε",
        "I've had them for three years now -- O'Brien's 3rd place, 2.5 km",
    ],
)
def test_index_terms_are_the_terms_fts5_indexes(fts5: sqlite3.Connection, text: str) -> None:
    assert index_terms(text) == _fts5_terms(fts5, text)


_ALPHABET = [*"abcdeghiklmnorstuvwxyz", *"aeiouy" * 3, " ", "'", "-", "é", "ü", "ñ", "ø", "\u0301", "\u0327", "ा", "喜"]


@given(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=60))
def test_any_text_gives_the_terms_fts5_indexes(fts5: sqlite3.Connection, text: str) -> None:
    assert index_terms(text) == _fts5_terms(fts5, text)
