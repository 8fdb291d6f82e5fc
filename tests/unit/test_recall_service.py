from datetime import timedelta

import pytest

from rearview.bootstrap import Services
from rearview.clock import ManualClock
from rearview.domain.recall import RecallQuery
from rearview.domain.search import Candidate, MemoryFilter, SearchTraits
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.service.recall import RecallService

pytestmark = pytest.mark.unit
NS = "acme:u-42"


def remember(services: Services, content: str, **kw: object) -> str:
    res = services.writer.write(NS, MemoryWrite(content=content, **kw))
    assert res.status == "stored", res
    return res.id


def ids(services: Services, query: str, ns: str = NS, **kw: object) -> list[str]:
    return [h.id for h in services.recaller.recall(ns, RecallQuery(query=query, **kw)).results]


@pytest.fixture
def seeded(services: Services, clock: ManualClock) -> dict[str, str]:
    start = clock.now()
    out = {
        "adoption": remember(
            services,
            "Caroline said she contacted an adoption agency about adopting a child",
            occurred_at=start - timedelta(days=20),
            entities=["Caroline"],
            tags=["family"],
            event_type="conversation",
        ),
        "pottery": remember(
            services,
            "Melanie took a pottery class and made a bowl with her kids",
            occurred_at=start - timedelta(days=1),
            tags=["hobby"],
            event_type="activity",
        ),
        "deploy": remember(
            services,
            "The billing service deploy failed because the database migration timed out",
            occurred_at=start - timedelta(days=8),
            tags=["ops"],
            event_type="tool_call",
        ),
    }
    return out


def test_finds_the_memory_that_answers(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="What did Caroline say about the adoption agency?"))
    assert resp.results[0].id == seeded["adoption"]
    assert not resp.no_relevant_memory and not resp.truncated
    hit = resp.results[0]
    assert hit.layer == "episodic" and hit.provenance == [hit.id] and hit.tags == ["family"] and hit.score > 0


def test_unrelated_query_says_nothing_is_remembered(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="quantum chromodynamics lattice gauge"))
    assert resp.no_relevant_memory and resp.results == []


def test_empty_namespace_says_nothing_is_remembered(services: Services) -> None:
    resp = services.recaller.recall("empty", RecallQuery(query="anything about pottery?"))
    assert resp.no_relevant_memory and resp.results == []
    assert services.stats.of("empty").recall_count == 1 and services.stats.of("empty").recall_hits == 0


def test_time_expression_in_query_filters_by_time(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="what happened yesterday?"))
    assert resp.time_range is not None and resp.time_range["expression"].lower() == "yesterday"
    assert [h.id for h in resp.results] == [seeded["pottery"]]


def test_time_expression_in_chinese(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="昨天发生了什么"))
    assert resp.time_range is not None and resp.time_range["applied_as"] == "filter"
    assert [h.id for h in resp.results] == [seeded["pottery"]] and not resp.no_relevant_memory


def test_as_of_moves_relative_time(services: Services, seeded: dict[str, str], clock: ManualClock) -> None:
    as_of = clock.now() - timedelta(days=19)  # "yesterday" is then the adoption day
    got = ids(services, "what happened yesterday?", as_of=as_of)
    assert got == [seeded["adoption"]]


def test_explicit_since_until(services: Services, seeded: dict[str, str], clock: ManualClock) -> None:
    got = ids(
        services,
        "what failed in the deploy?",
        since=clock.now() - timedelta(days=10),
        until=clock.now() - timedelta(days=2),
    )
    assert got == [seeded["deploy"]]


def test_tags_and_event_types_filter(services: Services, seeded: dict[str, str]) -> None:
    assert ids(services, "what failed or was made?", tags=["ops"]) == [seeded["deploy"]]
    assert ids(services, "pottery bowl kids deploy", event_types=["activity"]) == [seeded["pottery"]]


def test_layers_filter(services: Services, seeded: dict[str, str]) -> None:
    fact = services.writer.write(NS, MemoryWrite(layer="semantic", content="Melanie loves pottery and painting"))
    assert fact.id in ids(services, "Melanie pottery", layers=["semantic"])
    assert fact.id not in ids(services, "Melanie pottery", layers=["episodic"])


def test_token_budget_cuts_and_says_so(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="Caroline Melanie billing deploy pottery", token_budget=20))
    assert resp.truncated and 1 <= len(resp.results) < 3


def test_explain_reports_every_stage(services: Services, seeded: dict[str, str]) -> None:
    resp = services.recaller.recall(NS, RecallQuery(query="adoption agency", explain=True))
    assert resp.trace is not None
    names = [s.stage for s in resp.trace.stages]
    for stage in ("parse", "keyword", "embed", "vector", "fuse", "rank", "collapse", "relevance", "budget"):
        assert stage in names
    keyword = next(s for s in resp.trace.stages if s.stage == "keyword")
    assert keyword.candidates and keyword.candidates[0]["id"] == seeded["adoption"]
    assert keyword.detail["context_weight"] == services.recaller.tuning.context_weight
    # A namespace this small holds fewer keyword matches than the pool: the list is every match (weighted_sum).
    fuse = next(s for s in resp.trace.stages if s.stage == "fuse")
    assert fuse.detail["keyword_all"] is True
    rank = next(s for s in resp.trace.stages if s.stage == "rank")
    assert {"fused", "decay", "boost", "score"} <= set(rank.candidates[0])
    assert services.recaller.recall(NS, RecallQuery(query="adoption agency")).trace is None


def test_recall_counts_accesses(services: Services, seeded: dict[str, str]) -> None:
    services.recaller.recall(NS, RecallQuery(query="adoption agency Caroline"))
    memory = services.store.get(NS, seeded["adoption"])
    assert memory is not None and memory.access_count == 1 and memory.last_accessed_at is not None


def test_collapses_the_same_memory_in_two_layers(services: Services) -> None:
    e = remember(services, "Dana is allergic to peanuts and carries an epipen")
    f = services.writer.write(
        NS, MemoryWrite(layer="semantic", content="Dana is allergic to peanuts and carries an epipen")
    ).id
    resp = services.recaller.recall(NS, RecallQuery(query="is Dana allergic to anything?"))
    got = [h.id for h in resp.results]
    assert len({e, f} & set(got)) == 1
    assert resp.results[0].collapsed in ([e], [f])


def test_session_working_memory_is_returned_as_is(services: Services, seeded: dict[str, str]) -> None:
    services.working.put(NS, "s-1", "plan", WorkingWrite(value={"step": 2, "goal": "book hotel"}))
    resp = services.recaller.recall(NS, RecallQuery(query="adoption", session_id="s-1"))
    assert resp.working == {"plan": {"step": 2, "goal": "book hotel"}}
    assert services.recaller.recall(NS, RecallQuery(query="adoption")).working is None


def test_recall_never_crosses_namespaces(services: Services, seeded: dict[str, str]) -> None:
    for other in ("acme", "acme:u-42:travel", "acme:u-4", "acme:u-420"):
        resp = services.recaller.recall(other, RecallQuery(query="Caroline adoption agency pottery deploy"))
        assert resp.results == [] and resp.no_relevant_memory


def _question_then_answer(services: Services, clock: ManualClock) -> tuple[str, str]:
    """Two turns of a session: a question that "pottery studio in Lisbon" matches, and its answer, which shares
    no word with it."""
    start = clock.now() - timedelta(days=3)
    asked = remember(
        services, "Melanie: which pottery studio did you join in Lisbon?", session_id="s-7", occurred_at=start
    )
    answer = remember(
        services, "Caroline: the small one near the river, every Thursday", session_id="s-7",
        occurred_at=start + timedelta(seconds=1),
    )  # fmt: skip
    return asked, answer


def test_the_reply_after_a_matching_turn_joins_the_results(services: Services, clock: ManualClock) -> None:
    asked, answer = _question_then_answer(services, clock)
    other = remember(
        services, "Caroline: my brother moved to Porto", session_id="s-8", occurred_at=clock.now() - timedelta(days=3)
    )
    resp = services.recaller.recall(NS, RecallQuery(query="pottery studio in Lisbon", explain=True))
    got = [h.id for h in resp.results]
    # The hit asks a question: its reply joins at reply_factor of the hit's score, whatever its own match; then
    # the question is demoted by question_factor, so the answer ranks first.
    tuning = services.recaller.tuning
    assert tuning.question_factor < tuning.reply_factor
    assert got[:2] == [answer, asked] and other not in got[:2]
    scores = {h.id: h.score for h in resp.results}
    assert scores[asked] == pytest.approx(scores[answer] / tuning.reply_factor * tuning.question_factor, rel=1e-3)
    assert resp.trace is not None
    stages = {s.stage: s for s in resp.trace.stages}
    assert "neighbours" in stages and stages["questions"].detail["demoted"] == [asked]


def test_without_the_question_factor_the_question_keeps_its_rank(services: Services, clock: ManualClock) -> None:
    asked, answer = _question_then_answer(services, clock)
    plain = services.recaller.tuning.model_copy(update={"question_factor": 1.0})
    recaller = RecallService(services.store, services.index, services.embedder, clock, plain, 0.0)
    resp = recaller.recall(NS, RecallQuery(query="pottery studio in Lisbon", explain=True))
    assert [h.id for h in resp.results][:2] == [asked, answer]
    assert resp.trace is not None and "questions" not in {s.stage for s in resp.trace.stages}


def test_a_when_question_lifts_the_memory_that_dates_the_event(services: Services, clock: ManualClock) -> None:
    start = clock.now() - timedelta(days=40)
    for other in (
        "The billing deploy failed on the migration",
        "Caroline called the adoption agency",
        "Melanie made a bowl in pottery class",
        "Nate cooked coconut ice cream for the party",
    ):
        remember(services, other, occurred_at=start)
    talks = remember(services, "Nate: I get my turtles out for a walk, the turtles love it", occurred_at=start)
    dates = remember(services, "Nate: I got the turtles three years ago", occurred_at=start + timedelta(days=1))
    tuning = services.recaller.tuning
    assert tuning.time_answer_boost > 0
    query = "When did Nate get his turtles?"

    plain = tuning.model_copy(update={"time_answer_boost": 0.0})
    recaller = RecallService(services.store, services.index, services.embedder, clock, plain, 0.0)
    alone = recaller.recall(NS, RecallQuery(query=query)).results
    assert [h.id for h in alone][:2] == [talks, dates]  # without the boost the turn about the turtles wins

    when = services.recaller.recall(NS, RecallQuery(query=query, explain=True))
    assert [h.id for h in when.results][:2] == [dates, talks]
    assert when.trace is not None
    stage = {s.stage: s for s in when.trace.stages}["time_answers"]
    assert stage.detail["boosted"] == [dates] and stage.detail["factor"] == 1.0 + tuning.time_answer_boost
    # (Ratios: the first recall counted an access of both memories, which the second one's scores carry.)
    boosted, unboosted = {h.id: h.score for h in when.results}, {h.id: h.score for h in alone}
    lift = (boosted[dates] / boosted[talks]) / (unboosted[dates] / unboosted[talks])
    assert lift == pytest.approx(1.0 + tuning.time_answer_boost, rel=1e-3)

    # A question that does not ask when lifts no memory for its time words.
    what = services.recaller.recall(NS, RecallQuery(query="What does Nate get for his turtles?", explain=True))
    assert what.trace is not None and "time_answers" not in {s.stage for s in what.trace.stages}


def test_what_the_named_person_said_is_lifted_by_the_entity_boost(services: Services, clock: ManualClock) -> None:
    start = clock.now() - timedelta(days=5)
    melanie = remember(services, "I take the pottery class in Lisbon", occurred_at=start, entities=["Melanie"])
    caroline = remember(services, "I took a pottery class in Lisbon", occurred_at=start, entities=["Caroline"])
    tuning = services.recaller.tuning
    assert tuning.entity_boost > 0
    query = "What pottery class did Caroline take in Lisbon?"
    plain = tuning.model_copy(update={"entity_boost": 0.0})
    recaller = RecallService(services.store, services.index, services.embedder, clock, plain, 0.0)
    without = recaller.recall(NS, RecallQuery(query=query, explain=True))
    assert without.trace is not None and "entities" not in {s.stage for s in without.trace.stages}

    resp = services.recaller.recall(NS, RecallQuery(query=query, explain=True))
    assert resp.trace is not None
    stage = {s.stage: s for s in resp.trace.stages}["entities"]
    assert stage.detail["boosted"] == [caroline] and stage.detail["factor"] == 1.0 + tuning.entity_boost
    boosted, unboosted = {h.id: h.score for h in resp.results}, {h.id: h.score for h in without.results}
    # (Ratios: the first recall counted an access of both memories, which the second one's scores carry.)
    lift = (boosted[caroline] / boosted[melanie]) / (unboosted[caroline] / unboosted[melanie])
    assert lift == pytest.approx(1.0 + tuning.entity_boost, rel=1e-3)


def test_the_reply_to_the_named_person_keeps_its_share_of_the_unboosted_score(
    services: Services, clock: ManualClock
) -> None:
    start = clock.now() - timedelta(days=3)
    asked = remember(
        services,
        "which pottery studio did you join in Lisbon?",
        session_id="s-7",
        occurred_at=start,
        entities=["Melanie"],
    )
    answer = remember(
        services, "the small one near the river, every Thursday", session_id="s-7",
        occurred_at=start + timedelta(seconds=1), entities=["Caroline"],
    )  # fmt: skip
    tuning = services.recaller.tuning
    resp = services.recaller.recall(NS, RecallQuery(query="Melanie's pottery studio in Lisbon"))
    scores = {h.id: h.score for h in resp.results}
    # The question was boosted (named) and demoted (asks) after its reply joined at reply_factor of its plain score.
    factor = (1.0 + tuning.entity_boost) * tuning.question_factor / tuning.reply_factor
    assert scores[asked] == pytest.approx(scores[answer] * factor, rel=1e-3)


def test_the_turn_after_a_statement_joins_at_the_smaller_neighbour_factor(
    services: Services, clock: ManualClock
) -> None:
    tuning = services.recaller.tuning
    assert tuning.neighbour_factor < tuning.reply_factor
    start = clock.now() - timedelta(days=3)
    said = remember(services, "Melanie: I joined the pottery studio in Lisbon.", session_id="s-7", occurred_at=start)
    after = remember(
        services, "Caroline: my brother moved to Porto", session_id="s-7", occurred_at=start + timedelta(seconds=1)
    )
    resp = services.recaller.recall(NS, RecallQuery(query="pottery studio in Lisbon"))
    scores = {h.id: h.score for h in resp.results}
    assert resp.results[0].id == said
    assert scores[after] == pytest.approx(tuning.neighbour_factor * scores[said], rel=1e-3)


def test_time_words_with_a_topic_boost_instead_of_filtering(services: Services, seeded: dict[str, str]) -> None:
    # "yesterday" holds only the pottery class; the deploy (8 days ago) is what the words name.
    resp = services.recaller.recall(NS, RecallQuery(query="which deploy failed yesterday because of the migration?"))
    assert resp.time_range is not None and resp.time_range["applied_as"] == "boost"
    assert resp.results[0].id == seeded["deploy"]
    vague = services.recaller.recall(NS, RecallQuery(query="what happened yesterday?"))
    assert vague.time_range is not None and vague.time_range["applied_as"] == "filter"
    assert [h.id for h in vague.results] == [seeded["pottery"]]


def test_time_boost_ranks_the_memory_in_range_first(services: Services, clock: ManualClock) -> None:
    old = remember(
        services, "Team standup: discussed the search rewrite plan", occurred_at=clock.now() - timedelta(days=30)
    )
    new = remember(
        services, "Team standup: discussed the search rewrite risks", occurred_at=clock.now() - timedelta(days=1)
    )
    got = [h.id for h in services.recaller.recall(NS, RecallQuery(query="search rewrite standup yesterday")).results]
    assert got[:2] == [new, old]
    got = [h.id for h in services.recaller.recall(NS, RecallQuery(query="search rewrite standup 30 days ago")).results]
    assert got[:2] == [old, new]


TOPICS = ["rent", "hiking", "tea", "piano", "taxes", "garden", "flight", "dentist", "laptop", "bakery", "chess",
          "running", "sushi", "museum", "bicycle", "concert", "library", "printer", "camping", "yoga", "soup",
          "ferry", "violin", "pottery", "kayak"]  # fmt: skip


def _embed_stage(services: Services, query: str) -> dict[str, object]:
    resp = services.recaller.recall(NS, RecallQuery(query=query, explain=True))
    assert resp.trace is not None
    return next(s.detail for s in resp.trace.stages if s.stage == "embed")


def test_names_most_episodes_carry_are_left_out_of_the_vector_query_only(services: Services) -> None:
    for i, topic in enumerate(TOPICS):
        remember(
            services, f"Dana: talked about the {topic} on day {i}", entities=["Dana", *(["Noor"] if i < 3 else [])]
        )
    assert services.recaller.tuning.common_entity_min_episodes <= len(TOPICS)

    detail = _embed_stage(services, "What does Dana think about Noor's piano?")

    # Dana is named by every episode; Noor by 3 of 25, under common_entity_share (0.2): still a clue.
    assert detail["common_entities_left_out"] == ["Dana"]
    assert detail["text"] == "What does think about Noor's piano?"
    resp = services.recaller.recall(NS, RecallQuery(query="What does Dana think about Noor's piano?", explain=True))
    assert resp.trace is not None
    keyword = next(s.detail for s in resp.trace.stages if s.stage == "parse")
    assert "dana" in keyword["terms"], "keyword search keeps the name"
    assert "piano" in resp.results[0].content


def test_names_are_kept_in_a_small_namespace_and_when_nothing_else_is_asked(services: Services) -> None:
    for topic in TOPICS[:5]:
        remember(services, f"Dana: talked about the {topic}", entities=["Dana"])
    assert _embed_stage(services, "what about Dana's piano?")["common_entities_left_out"] == []
    for topic in TOPICS[5:]:
        remember(services, f"Dana: talked about the {topic}", entities=["Dana"])
    assert _embed_stage(services, "what about Dana's piano?")["text"] == "what about piano?"
    assert _embed_stage(services, "Dana?")["text"] == "Dana?", "a query of nothing but the name keeps it"


class _RecordingIndex:
    """The real index, recording the filter and limit of every vector search (a spy, not a mock)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self.vector_calls: list[tuple[MemoryFilter, int, list[str]]] = []

    def vector_search(self, namespace: str, vector: object, flt: MemoryFilter, limit: int) -> list[Candidate]:
        found: list[Candidate] = self._inner.vector_search(namespace, vector, flt, limit)  # type: ignore[attr-defined]
        self.vector_calls.append((flt, limit, [c.id for c in found]))
        return found

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def _feedback_recall(
    services: Services, clock: ManualClock, index_type: type[_RecordingIndex] | None = None, **update: object
) -> tuple[list[str], _RecordingIndex, dict[str, object]]:
    tuning = services.recaller.tuning.model_copy(update={"candidates_per_list": 5, **update})
    index = (index_type or _RecordingIndex)(services.index)
    recaller = RecallService(services.store, index, services.embedder, clock, tuning, 0.0)  # type: ignore[arg-type]
    resp = recaller.recall(NS, RecallQuery(query="pottery class with the kids", top_k=2, explain=True))
    assert resp.trace is not None
    feedback = {st.stage: st for st in resp.trace.stages}["feedback"]
    return [h.id for h in resp.results], index, feedback.detail


@pytest.fixture
def thirty(services: Services, clock: ManualClock) -> None:
    """30 episodes on five topics: more than the pools of the feedback tests below."""
    start = clock.now() - timedelta(days=3)
    topics = ("pottery class", "kids at the museum", "billing deploy", "adoption agency", "camping trip")
    for i in range(30):
        remember(services, f"Melanie talked about the {topics[i % 5]} number {i}", occurred_at=start)


@pytest.mark.usefixtures("thirty")
def test_feedback_rescores_the_first_searchs_wider_list_not_the_namespace(
    services: Services, clock: ManualClock
) -> None:
    assert services.recaller.tuning.feedback_weight > 0

    _, index, detail = _feedback_recall(services, clock, feedback_pool=12)
    assert detail["rescored"] == 12
    (first_flt, first_limit, first_ids), (second_flt, second_limit, second_ids) = index.vector_calls
    pool = 6  # max(candidates_per_list 5, top_k 2 * 3)
    assert first_flt.ids is None and first_limit == 12 and len(first_ids) == 12
    # The second pass reads only the first pass's 12, and returns the pool's worth of them.
    assert second_flt.ids == tuple(first_ids) and second_limit == pool
    assert set(second_ids) <= set(first_ids) and len(second_ids) == pool

    # A pool no wider than the fusion's list leaves the second pass to search the whole namespace.
    _, index, detail = _feedback_recall(services, clock, feedback_pool=1)
    (first_flt, first_limit, _), (second_flt, _, _) = index.vector_calls
    assert detail["rescored"] == "namespace"
    assert first_limit == pool and second_flt.ids is None


class _UncountedIndex(_RecordingIndex):
    """The same index, but one that cannot tell how many memories a search chooses from (as a remote one)."""

    def searches_all(self, namespace: str, flt: MemoryFilter, limit: int) -> bool | None:
        return None


@pytest.mark.usefixtures("thirty")
def test_feedback_over_a_pool_wider_than_the_namespace_finds_what_the_whole_namespace_pass_finds(
    services: Services, clock: ManualClock
) -> None:
    pool = 6  # max(candidates_per_list 5, top_k 2 * 3)
    services.recaller.recall(NS, RecallQuery(query="pottery"))  # SQLite counts once its vector caches are loaded
    assert services.index.searches_all(NS, MemoryFilter(), 30) is True
    assert services.index.searches_all(NS, MemoryFilter(), 29) is False
    # The index counts 30 memories, no more than the wide list: that list would hold them all and restrict the
    # second search to nothing, so the first asks for fusion's pool alone and the second searches the filter.
    results: list[list[str]] = []
    for feedback_pool in (1000, 30):
        found, index, detail = _feedback_recall(services, clock, feedback_pool=feedback_pool)
        (_, first_limit, _), (second_flt, _, _) = index.vector_calls
        assert first_limit == pool and second_flt.ids is None and detail["rescored"] == "namespace"
        results.append(found)
    # An index that cannot count: the first pass asks for the wide list. It returned all 30, fewer than it asked
    # for: restricting the second to them would change nothing, so it searches the filter as it is.
    found, index, detail = _feedback_recall(services, clock, feedback_pool=1000, index_type=_UncountedIndex)
    assert len(index.vector_calls[0][2]) == 30 and index.vector_calls[1][0].ids is None
    assert detail["rescored"] == "namespace"
    results.append(found)
    # Asked for exactly as many as there are, it cannot tell: the restriction stays.
    found, index, detail = _feedback_recall(services, clock, feedback_pool=30, index_type=_UncountedIndex)
    assert index.vector_calls[1][0].ids == tuple(index.vector_calls[0][2]) and detail["rescored"] == 30
    results.append(found)
    whole, index, _ = _feedback_recall(services, clock, feedback_pool=1)
    assert index.vector_calls[1][0].ids is None
    assert all(found == whole for found in results)


class _GraphWalkingIndex(_RecordingIndex):
    """The same index, answering as one whose searches walk a graph (SQLite's past its threshold)."""

    def scans_exactly(self, namespace: str, flt: MemoryFilter) -> bool:
        return False


@pytest.mark.usefixtures("thirty")
def test_feedback_searches_a_graph_again_instead_of_widening_its_first_search(
    services: Services, clock: ManualClock
) -> None:
    """A graph's search costs as much as the width asked for: the first pass asks for fusion's pool alone, and
    the second walks the graph with the moved vector, as a remote index's does."""
    pool = 6  # max(candidates_per_list 5, top_k 2 * 3)
    found, index, detail = _feedback_recall(services, clock, feedback_pool=12, index_type=_GraphWalkingIndex)
    (first_flt, first_limit, _), (second_flt, second_limit, _) = index.vector_calls
    assert first_flt.ids is None and first_limit == pool
    assert second_flt.ids is None and second_limit == pool and detail["rescored"] == "namespace"
    whole, _, _ = _feedback_recall(services, clock, feedback_pool=1)
    assert found == whole


class _RecordingHybridIndex(_RecordingIndex):
    """The same index answering both searches in one call, as OpenSearch's adapter does (msearch)."""

    traits = SearchTraits(round_trip=True)

    def scans_exactly(self, namespace: str, flt: MemoryFilter) -> bool:
        return False  # as the traits say (the port's default), not as the SQLite index inside

    def hybrid_search(
        self, namespace: str, text: str, vector: object, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> tuple[list[Candidate], list[Candidate]]:
        keyword = self._inner.keyword_search(namespace, text, flt, limit, context_weight)  # type: ignore[attr-defined]
        return keyword, self.vector_search(namespace, vector, flt, limit)


@pytest.mark.usefixtures("thirty")
def test_an_index_with_hybrid_search_runs_feedback_as_a_second_search_of_the_pool(
    services: Services, clock: ManualClock
) -> None:
    tuning = services.recaller.tuning.model_copy(update={"candidates_per_list": 5, "feedback_pool": 12})
    index = _RecordingHybridIndex(services.index)
    recaller = RecallService(services.store, index, services.embedder, clock, tuning, 0.0)  # type: ignore[arg-type]
    # With content words the searches go through hybrid_search; without (stop words only), through vector_search.
    for query in ("pottery class with the kids", "what was it about?"):
        index.vector_calls.clear()
        assert recaller.recall(NS, RecallQuery(query=query, top_k=2)).results
        (_, first_limit, _), (second_flt, second_limit, _) = index.vector_calls
        assert first_limit == second_limit == 6 and second_flt.ids is None


def test_what_a_caller_does_to_a_hit_leaves_the_next_recall_as_it_was(services: Services, clock: ManualClock) -> None:
    """Recall reads memories shared with the store's cache (SQLite): a hit is the caller's own, lists and all."""
    remember(services, "Dana planned the Lisbon launch", tags=["work"], entities=["Dana"])
    query = RecallQuery(query="Lisbon launch", top_k=1, explain=False)
    for _ in range(2):
        hit = services.recaller.recall(NS, query).results[0]
        assert hit.tags == ["work"] and hit.entities == ["Dana"] and hit.content == "Dana planned the Lisbon launch"
        hit.tags.append("changed")
        hit.entities.append("changed")
        hit.provenance.append("changed")
        hit.content = "changed"
