import pytest

from rearview.service.contradiction import contradicts, negation_count, opposite_polarity

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("a", "b", "opposite"),
    [
        ("I drink coffee every morning", "I no longer drink coffee", True),
        ("The user is vegetarian", "The user is not vegetarian", True),
        ("I like jazz", "I don't like jazz", True),
        ("我喜欢咖啡", "我不喜欢咖啡", True),
        ("I like jazz", "I like jazz a lot", False),
        ("I don't eat meat", "I never eat meat", False),
        ("She is not coming", "She is not coming today", False),
    ],
)
def test_polarity(a: str, b: str, opposite: bool) -> None:
    assert opposite_polarity(a, b) is opposite


def test_negation_counts_words_not_substrings() -> None:
    assert negation_count("notable knowledge of nothingness") == 0
    assert negation_count("not now, no") == 2


def test_contradiction_needs_same_topic() -> None:
    assert contradicts("I don't like jazz", "I like jazz", cosine=0.9, threshold=0.8)
    assert not contradicts("I don't like jazz", "I like sushi", cosine=0.4, threshold=0.8)
    assert not contradicts("I like jazz", "I like jazz", cosine=0.99, threshold=0.8)


def test_same_words_negated_contradict_whatever_the_embedder_says() -> None:
    assert contradicts("The user does not like jazz music", "The user likes jazz music", cosine=0.3, threshold=0.8)
    assert not contradicts("The user does not like jazz", "Tom plays the trumpet", cosine=0.3, threshold=0.8)
