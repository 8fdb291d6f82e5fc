import pytest

from rearview.service.contradiction import Scale, contradicts, judge, negation_count, opposite_polarity

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


# --- the judge: confirms / refines / contradicts / unrelated, in free text ------------------------------------------

SCALE = Scale(related=0.55, same=0.92)


@pytest.mark.parametrize(
    ("old", "new", "cosine", "verdict"),
    [
        ("The user drinks coffee every morning", "The user quit coffee and drinks tea now", 0.69, "contradicts"),
        ("The user lives in Berlin", "The user moved to Munich in March", 0.64, "contradicts"),
        ("The user works at Acme Corp", "The user left Acme and joined Globex", 0.6, "contradicts"),
        ("The user prefers email for notifications", "Notifications should go to Slack, not email", 0.56,
         "contradicts"),
        ("用户每天抽烟", "用户已经戒烟了", 0.55, "contradicts"),
        ("用户喜欢在回复里用表情", "用户不想再在回复里看到表情", 0.9, "contradicts"),
        ("The user drinks coffee every morning", "Every morning the user has a coffee", 0.91, "confirms"),
        ("用户住在北京", "用户家在北京", 0.9, "confirms"),
        ("The user lives in Berlin", "The user lives in Berlin, in the Kreuzberg district", 0.88, "refines"),
        ("用户吃素", "用户吃素，但是吃鸡蛋", 0.76, "refines"),
        ("The user is allergic to peanuts", "The user is not allergic to shellfish", 0.53, "unrelated"),
        ("The user's colleague prefers tabs", "The user prefers spaces for indentation", 0.35, "unrelated"),
        ("The user runs in the mornings", "The user never runs the test suite locally", 0.37, "unrelated"),
        ("用户对花生过敏", "用户对海鲜不过敏", 0.46, "unrelated"),
    ],
)  # fmt: skip
def test_the_judge_reads_meaning_polarity_and_change(old: str, new: str, cosine: float, verdict: str) -> None:
    assert judge(new, old, cosine, SCALE) == verdict


def test_a_change_said_in_the_evidence_counts_as_said_by_the_new_memory() -> None:
    old, new = "The user regularly: evening run along the river", "The user regularly: morning run before work"

    assert judge(new, old, 0.8, SCALE) != "contradicts"
    assert judge(new, old, 0.8, SCALE, evidence=["switched to morning runs, no more evening runs"]) == "contradicts"


def test_on_one_dimension_another_value_contradicts_without_a_change_word() -> None:
    assert judge("The user is vegan", "The user is vegetarian", 0.8, SCALE, same_dimension=True) == "contradicts"
    assert judge("The user is vegan", "The user is vegetarian", 0.8, SCALE) == "unrelated"


def test_a_change_said_of_what_the_old_memory_is_about_supersedes_it_however_worded() -> None:
    old, new = "The user regularly: drives to work daily", "The user rides the metro to the office now"
    said = ["The user said the car is sold, now takes the metro to work."]

    assert judge(new, old, 0.3, SCALE) == "unrelated"
    assert judge(new, old, 0.3, SCALE, evidence=said) == "contradicts"
    assert (
        judge("用户坐地铁通勤", "用户每天开车上班", 0.3, SCALE, evidence=["用户说车已经卖了，现在坐地铁上班。"])
        == "contradicts"
    )


def test_a_change_about_something_else_leaves_the_old_memory_alone() -> None:
    said = ["The user said the team moved to Notion for notes."]

    assert judge("The user keeps notes in Notion", "The user drives to work daily", 0.3, SCALE, evidence=said) == (
        "unrelated"
    )
