"""Recall latency at scale: one namespace of --in-namespace episodes among --total, against a bare FTS5 query.

Synthetic episodes (deterministic RNG; sentences from a few thousand words: names, places, dates, products,
some Chinese) are written through `writer.write_batch` (batches of 100, importance 1.0 so none is skipped).
If the write path would take too long, only the first --write-path episodes (the target namespace first) go
through it, and the rest is loaded through `store.apply` with ChangeSets of real episodes and their real
vectors; the output says which.
Latency excludes the query embedding: the embedder is wrapped so that the query texts, embedded once before
timing, are served from a dict (the write path still embeds every episode).

    .venv/bin/python bench/recall_latency.py --total 20000 --in-namespace 5000      # smoke run
    .venv/bin/python bench/recall_latency.py                                         # 1M / 100k
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from metrics import format_table, percentile
from rearview.adapters.hashing_embedder import HashingEmbedder
from rearview.adapters.sqlite import DB_FILENAME, SqliteSearchIndex
from rearview.adapters.sqlite.namespace_fts import FtsTable, fts_table
from rearview.bootstrap import Services, build
from rearview.clock import ManualClock
from rearview.domain.changes import ChangeSet
from rearview.domain.memory import Episode
from rearview.domain.recall import RecallQuery
from rearview.domain.search import Candidate, EntityShares, MemoryFilter
from rearview.domain.write import MemoryWrite
from rearview.ports import Embedder, SearchIndex
from rearview.service.recall import RecallService
from rearview.settings import Settings
from rearview.text_analysis import query_terms
from recall_params import add_param_argument, with_params

TARGET_NAMESPACE = "bench:target"
OTHER_NAMESPACE_SIZE = 1000
WRITE_BATCH = 100
APPLY_BATCH = 1000
WINDOW = 10_000
START = datetime(2023, 1, 1, tzinfo=UTC)
# Each namespace's episodes are spread over this span, in order, so recency and time filters see real dates.
SPAN = timedelta(days=730)
TARGETS = {"p95_ms": 50.0, "ratio_to_bare": 4.0, "ingest_per_s": 1000.0, "rss_gib": 2.0}

# --- vocabulary ---------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """A word list written as one space-separated string: easier to read and extend than list literals."""
    return text.split()


FIRST_NAMES = _words(
    "Alice Bob Carol David Emma Frank Grace Henry Irene Jack Karen Liam Maria Noah Olivia Paul Quinn Rosa "
    "Samuel Tara Umar Vera Walter Xenia Yusuf Zoe Aisha Bruno Chloe Diego Elena Felix Gita Hugo Ines Jonas "
    "Kenji Lena Mateo Nadia Oscar Priya Rafael Sofia Tomas Uma Victor Wendy Yara Zain Amara Boris Camila "
    "Dmitri Esther Farah Giulia Hassan Ingrid Javier Keiko Lars Mei Nikolai Omar Petra Ravi Selin Theo "
    "Ulrike Valentina Wei Ximena Yosef Zara Anika Caleb Daria Emil Fiona Gustav Hana Ivan Jade Kofi Luca "
    "Maya Nils Orla Pablo Rhea Stefan Tessa Ugo Vikram Willa Yuki"
)
SYLLABLES = _words(
    "ka lo mi ra ten vor sal bri dun fel gar hol ish jun kel mar nor ost pel quin ros sta tor ul ven wick "
    "ber chan dal ein fro gil han ivo jor kas lin mon nev orr pra rin sel tam und vas wen yor zel"
)
CITIES = _words(
    "Lisbon Porto Madrid Barcelona Valencia Paris Lyon Marseille Berlin Munich Hamburg Vienna Zurich Geneva "
    "Milan Rome Naples Turin Athens Istanbul Cairo Nairobi Lagos Accra Casablanca Tunis Dubai Doha Mumbai "
    "Delhi Bangalore Chennai Colombo Bangkok Hanoi Singapore Jakarta Manila Seoul Busan Tokyo Osaka Kyoto "
    "Sapporo Sydney Melbourne Auckland Wellington Vancouver Toronto Montreal Seattle Portland Denver Austin "
    "Chicago Boston Miami Atlanta Lima Bogota Quito Santiago Montevideo Oslo Bergen Stockholm Helsinki "
    "Copenhagen Dublin Cork Edinburgh Glasgow Manchester Leeds Bristol Cardiff Prague Krakow Warsaw Budapest "
    "Bucharest Sofia Riga Tallinn Vilnius Reykjavik Seville Granada Bilbao Florence Venice Bologna Lucerne"
)
PLACES = _words(
    "gym office library park beach cafe bakery museum airport station hospital clinic school campus "
    "market mall garden lake river mountain trail stadium theater cinema gallery studio warehouse harbor "
    "restaurant bar hotel hostel cabin farm vineyard bridge tower castle cathedral embassy court bank"
)
NOUNS = _words(
    "meeting deadline report budget invoice contract proposal presentation interview review roadmap "
    "release deployment outage incident migration backup database server laptop phone tablet camera "
    "bicycle car train flight ticket passport visa apartment lease mortgage salary bonus promotion "
    "vacation holiday wedding birthday anniversary party dinner lunch breakfast recipe soup salad pasta "
    "pizza sushi curry coffee tea wine beer cake cookies bread cheese chocolate marathon race match game "
    "concert festival exhibition lecture workshop course exam thesis paper book novel poem song album "
    "guitar piano violin drums painting sketch photo video podcast newsletter article blog garden plant "
    "tomato rose cactus dog cat puppy kitten horse parrot fish aquarium doctor dentist therapist nurse "
    "teacher student manager client customer vendor partner investor founder engineer designer lawyer "
    "accountant plumber electrician neighbor cousin sister brother mother father grandmother uncle aunt "
    "daughter son friend colleague roommate team project sprint ticket bug feature prototype demo "
    "dashboard spreadsheet slide chart survey dataset model experiment hypothesis result conference "
    "keynote panel booth sponsor grant loan tax refund receipt order package delivery shipment return "
    "subscription membership account password appointment reservation schedule calendar reminder "
    "allergy diet medication vitamin injury surgery recovery therapy workout yoga pilates swimming "
    "hiking climbing skiing surfing sailing fishing camping cycling running tennis chess puzzle"
)
VERBS = _words(
    "booked cancelled moved finished started postponed reviewed signed sent received bought sold "
    "returned fixed broke lost found visited called emailed met hired fired promoted trained planned "
    "cooked baked painted wrote read watched recorded published shipped deployed tested debugged "
    "presented discussed approved rejected renewed borrowed lent paid ordered delivered adopted "
    "celebrated missed attended organized hosted joined left rescheduled confirmed requested"
)
ADJECTIVES = _words(
    "urgent quick long short important tiny huge quiet noisy expensive cheap late early new old "
    "difficult easy boring exciting stressful relaxing delicious spicy sweet bitter rainy sunny cold "
    "warm crowded empty private public annual weekly monthly final first second quarterly surprising"
)
MONTHS = _words("January February March April May June July August September October November December")
WEEKDAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
ZH_NAMES = _words("王伟 李娜 张敏 刘洋 陈静 杨帆 赵磊 黄丽 周杰 吴芳 徐明 孙悦 马超 朱琳 胡军 郭涛 何苗 林峰 罗婷 高翔")
ZH_PLACES = _words("北京 上海 广州 深圳 杭州 成都 重庆 西安 南京 武汉 苏州 天津 长沙 青岛 厦门 昆明 大连 哈尔滨")
ZH_NOUNS = _words(
    "会议 报告 预算 合同 项目 客户 航班 火车票 护照 公寓 生日 婚礼 晚饭 咖啡 蛋糕 比赛 音乐会 展览 课程 考试 "
    "论文 小说 吉他 钢琴 照片 花园 小狗 小猫 医生 牙医 老师 同事 邻居 姐姐 哥哥 妈妈 爸爸 朋友 团队 新功能"
)
ZH_VERBS = _words("预订 取消 完成 开始 推迟 审核 签署 发送 收到 购买 参加 组织 讨论 批准 修好 拜访")

TEMPLATES_EN = (
    "{name} {verb} the {adj} {noun} with {name2} in {city} on {weekday}.",
    "{name} {verb} a {noun} at the {place} near {city} on {month} {day}, {year}.",
    "Met {name} {surname} at the {place} to talk about the {noun} and the {noun2}.",
    "{name} said the {noun} for {company} is {adj} and must be {verb} before {month} {day}.",
    "On {weekday} {name} {verb} the {noun2} for {name2}'s {noun} in {city}.",
    "Note: {name} prefers {noun} over {noun2}; remember this for the {adj} {noun3}.",
    "{name} {surname} from {company} {verb} the {noun} ({amount} dollars) on {year}-{month_num}-{day:02d}.",
    "Flight to {city} {verb}: {name} lands at {hour}:{minute:02d} and goes straight to the {place}.",
    "The {adj} {noun} at {company} was {verb} after {name} found a problem with the {noun2}.",
    "{name} and {name2} {verb} a {noun} at the {place} in {city}; it was {adj}.",
    "Reminder from {name}: the {noun} with {surname} is on {month} {day} at {hour} o'clock.",
    "{name} wants to visit {city} in {month} to see the {noun} and try the local {noun2}.",
    "{name}'s {noun3} {verb} the {noun} because the {noun2} was {adj}.",
    "Called {name} {surname} about the {noun}; {company} will send the {noun2} by {weekday}.",
    "{name} recommended {company} for the {noun}; price {amount} euros, delivery in {small} days.",
)
TEMPLATES_ZH = (
    "{zname}在{zplace}{zverb}了{znoun}，{zname2}也来了。",
    "{month_num}月{day}日{zname}要去{zplace}参加{znoun}。",
    "{zname}说{znoun}已经{zverb}了，下周和{name}讨论{znoun2}。",
    "提醒：{zname}的{znoun}改到{weekday_zh}，地点在{zplace}。",
)
WEEKDAYS_ZH = _words("周一 周二 周三 周四 周五 周六 周日")


def _generated_words(
    rng: np.random.Generator, count: int, parts: tuple[int, int], suffixes: Sequence[str]
) -> list[str]:
    """Pronounceable made-up words (surnames, company names): distinct, deterministic."""
    words: dict[str, None] = {}
    while len(words) < count:
        n = int(rng.integers(parts[0], parts[1] + 1))
        word = "".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), n)).capitalize()
        words[word + suffixes[int(rng.integers(0, len(suffixes)))]] = None
    return list(words)


def _zipf(n: int, s: float = 1.05) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** s
    return weights / weights.sum()


class SentenceGenerator:
    """Deterministic synthetic memories: a few thousand distinct words, Zipf-distributed like real text."""

    def __init__(self, seed: int, chinese_share: float = 0.05) -> None:
        self.rng = np.random.default_rng(seed)
        vocab_rng = np.random.default_rng(seed + 1)
        self.surnames = _generated_words(vocab_rng, 1200, (2, 3), ("", "", "son", "ez", "ski"))
        self.companies = _generated_words(vocab_rng, 800, (2, 3), (" Labs", " Systems", " Foods", " Bank", ""))
        self.chinese_share = chinese_share
        # Zipf over shuffled lists: which words are common differs per list, not alphabetical.
        self._pools: dict[str, tuple[list[str], np.ndarray]] = {}
        for key, words in {
            "name": FIRST_NAMES,
            "surname": self.surnames,
            "company": self.companies,
            "city": CITIES,
            "place": PLACES,
            "noun": NOUNS,
            "verb": VERBS,
            "adj": ADJECTIVES,
            "zname": ZH_NAMES,
            "zplace": ZH_PLACES,
            "znoun": ZH_NOUNS,
            "zverb": ZH_VERBS,
        }.items():
            shuffled = list(words)
            vocab_rng.shuffle(shuffled)
            self._pools[key] = (shuffled, _zipf(len(shuffled)))

    def vocabulary_size(self) -> int:
        words: set[str] = set()
        for pool, _ in self._pools.values():
            words.update(w.lower() for w in pool)
        return len(words | {m.lower() for m in MONTHS} | {d.lower() for d in WEEKDAYS})

    def _pick(self, key: str, size: int) -> list[str]:
        pool, p = self._pools[key]
        return [pool[int(i)] for i in self.rng.choice(len(pool), size=size, p=p)]

    def sentences(self, count: int) -> list[tuple[str, list[str]]]:
        """`count` (sentence, entities) pairs; vectorised draws, then formatting."""
        rng = self.rng
        picks = {key: self._pick(key, count) for key in self._pools}
        picks2 = {key: self._pick(key, count) for key in ("name", "noun", "zname", "znoun")}
        noun3 = self._pick("noun", count)
        chinese = rng.random(count) < self.chinese_share
        template_en = rng.integers(0, len(TEMPLATES_EN), count)
        template_zh = rng.integers(0, len(TEMPLATES_ZH), count)
        months = rng.integers(0, 12, count)
        days = rng.integers(1, 29, count)
        years = rng.integers(2022, 2027, count)
        weekdays = rng.integers(0, 7, count)
        hours = rng.integers(6, 22, count)
        minutes = rng.integers(0, 12, count) * 5
        amounts = rng.integers(5, 5000, count)
        smalls = rng.integers(1, 15, count)
        out: list[tuple[str, list[str]]] = []
        for i in range(count):
            fields: dict[str, Any] = {key: values[i] for key, values in picks.items()}
            fields.update(
                name2=picks2["name"][i],
                noun2=picks2["noun"][i],
                zname2=picks2["zname"][i],
                znoun2=picks2["znoun"][i],
                noun3=noun3[i],
                month=MONTHS[months[i]],
                month_num=int(months[i]) + 1,
                day=int(days[i]),
                year=int(years[i]),
                weekday=WEEKDAYS[weekdays[i]],
                weekday_zh=WEEKDAYS_ZH[weekdays[i]],
                hour=int(hours[i]),
                minute=int(minutes[i]),
                amount=int(amounts[i]),
                small=int(smalls[i]),
            )
            if chinese[i]:
                text = TEMPLATES_ZH[template_zh[i]].format(**fields)
                entities = [fields["zname"]]
            else:
                text = TEMPLATES_EN[template_en[i]].format(**fields)
                entities = [fields["name"]]
            out.append((text, entities))
        return out


# --- the embedder wrapper -----------------------------------------------------------------------------------


class PrecomputedQueryEmbedder:
    """Delegates to an embedder, but remembers what it embedded while `recording` and serves those texts from
    a dict afterwards.

    Lets the benchmark time recall without the query embedding while the write path still embeds for real: an
    untimed pass over the queries records the exact texts recall embeds (a query without its time expression,
    when one was parsed), and the timed pass finds them all in the dict.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        # Either port's attribute: this file also drives a baseline commit's library.
        self.scale = getattr(inner, "scale", None)
        self.relevance_floor = float(getattr(inner, "relevance_floor", 0.3))
        self._cache: dict[str, np.ndarray] = {}
        self.recording = False
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if texts and all(t in self._cache for t in texts):
            self.hits += len(texts)
            return np.stack([self._cache[t] for t in texts])
        vectors = self.inner.embed_queries(texts)
        if self.recording:
            self._cache.update(zip(texts, vectors, strict=True))
        else:
            self.misses += len(texts)
        return vectors


# --- the run ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Which namespace gets how many episodes, in ingest order (the target namespace first)."""

    namespaces: list[tuple[str, int]]

    @classmethod
    def make(cls, total: int, in_namespace: int) -> Plan:
        if not 0 < in_namespace <= total:
            raise SystemExit("--in-namespace must be between 1 and --total")
        rest = total - in_namespace
        others = [(f"bench:ns-{i:04d}", OTHER_NAMESPACE_SIZE) for i in range(rest // OTHER_NAMESPACE_SIZE)]
        if rest % OTHER_NAMESPACE_SIZE:
            others.append((f"bench:ns-{len(others):04d}", rest % OTHER_NAMESPACE_SIZE))
        return cls([(TARGET_NAMESPACE, in_namespace), *others])


def episode_stream(
    plan: Plan, generator: SentenceGenerator, chunk: int = 5000
) -> Iterator[tuple[str, int, str, datetime, list[str]]]:
    """(namespace, index, content, occurred_at, entities) in ingest order; each namespace's dates increase."""
    for namespace, size in plan.namespaces:
        step = SPAN / max(size, 1)
        for start in range(0, size, chunk):
            batch = generator.sentences(min(chunk, size - start))
            for offset, (text, entities) in enumerate(batch):
                i = start + offset
                yield namespace, i, text, START + step * i, entities


@dataclass
class Window:
    """A run of write-path episodes into one namespace: the rate as the namespace grows."""

    namespace: str
    size_before: int
    episodes: int = 0
    seconds: float = 0.0


@dataclass
class IngestStats:
    write_path: int = 0
    write_seconds: float = 0.0
    applied: int = 0
    apply_seconds: float = 0.0
    generate_seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    # Write-path windows of at most WINDOW episodes: every write scans its namespace for a near-duplicate,
    # so the rate depends on how large the namespace already is.
    windows: list[Window] = field(default_factory=list)

    def note_write(self, namespace: str, size_before: int, count: int, seconds: float) -> None:
        last = self.windows[-1] if self.windows else None
        if last is None or last.namespace != namespace or last.episodes >= WINDOW:
            last = Window(namespace, size_before)
            self.windows.append(last)
        last.episodes += count
        last.seconds += seconds


def ingest(
    services: Services,
    clock: ManualClock,
    plan: Plan,
    generator: SentenceGenerator,
    write_path_limit: int,
    log: Callable[[str], None],
) -> IngestStats:
    stats = IngestStats()
    pending: list[tuple[str, int, str, datetime, list[str]]] = []
    started = time.perf_counter()
    last_log = started

    def flush() -> None:
        nonlocal pending
        if not pending:
            return
        namespace = pending[0][0]
        if stats.write_path < write_path_limit:
            items = [
                MemoryWrite(
                    layer="episodic",
                    id=f"e{i}",
                    content=text,
                    occurred_at=occurred,
                    entities=entities,
                    importance=1.0,
                )
                for _, i, text, occurred, entities in pending
            ]
            clock.set(pending[-1][3])
            t0 = time.perf_counter()
            results = services.writer.write_batch(namespace, items)
            elapsed = time.perf_counter() - t0
            stats.write_seconds += elapsed
            stats.write_path += len(items)
            stats.note_write(namespace, pending[0][1], len(items), elapsed)
            stats.statuses.update(r.status for r in results)
        else:
            t0 = time.perf_counter()
            vectors = services.embedder.embed([text for _, _, text, _, _ in pending])
            changes = ChangeSet(
                upserts=[
                    (
                        Episode(
                            id=f"e{i}",
                            namespace=namespace,
                            content=text,
                            occurred_at=occurred,
                            entities=entities,
                            importance=1.0,
                            created_at=occurred,
                        ),
                        vectors[row],
                    )
                    for row, (_, i, text, occurred, entities) in enumerate(pending)
                ]
            )
            services.store.apply(namespace, changes)
            stats.apply_seconds += time.perf_counter() - t0
            stats.applied += len(pending)
        pending = []

    gen_started = time.perf_counter()
    for seen, item in enumerate(episode_stream(plan, generator), start=1):
        stats.generate_seconds += time.perf_counter() - gen_started
        if pending and (
            pending[0][0] != item[0]
            or len(pending) >= (WRITE_BATCH if stats.write_path < write_path_limit else APPLY_BATCH)
        ):
            flush()
        pending.append(item)
        now = time.perf_counter()
        if now - last_log > 30:
            last_log = now
            log(
                f"  {seen:,} episodes after {now - started:.0f}s "
                f"(write path {stats.write_path:,}, applied {stats.applied:,}, rss {rss_gib():.2f} GiB)"
            )
        gen_started = time.perf_counter()
    flush()
    return stats


def make_queries(services: Services, size: int, count: int, seed: int) -> list[str]:
    """2 to 6 words drawn from random episodes of the target namespace (so most queries have matches); in one
    query of five, the last word comes from another episode."""
    rng = np.random.default_rng(seed)
    ids = [f"e{int(i)}" for i in rng.integers(0, size, count * 2)]
    memories = services.store.get_many(TARGET_NAMESPACE, ids)
    texts = [memories[i].content for i in ids if i in memories]
    queries: list[str] = []
    for n in range(count):
        words = [w for w in query_terms(texts[n]) if len(w) > 1]
        extra = [w for w in query_terms(texts[-1 - n]) if len(w) > 1]
        k = int(rng.integers(2, 7))
        chosen = [str(w) for w in rng.choice(words, size=min(k, len(words)), replace=False)] if words else []
        if extra and rng.random() < 0.2 and chosen:
            chosen[-1] = str(rng.choice(extra))
        queries.append(" ".join(chosen) or texts[n])
    return queries


def rss_gib() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024)


class RecordOnlyIndex(SearchIndex):
    """The index of the recording pass: entity statistics from the measured index (recall leaves the common names
    out of the text it embeds), and no search results, so the measured index never sees the queries it is timed
    on (it keeps per-term match counts across queries, see SqliteSearchIndex)."""

    def __init__(self, inner: SqliteSearchIndex) -> None:
        self.inner = inner
        self.traits = inner.traits

    def keyword_search(
        self, namespace: str, text: str, flt: MemoryFilter, limit: int, context_weight: float = 0.0
    ) -> list[Candidate]:
        return []

    def vector_search(self, namespace: str, vector: np.ndarray, flt: MemoryFilter, limit: int) -> list[Candidate]:
        return []

    def entity_shares(self, namespace: str) -> EntityShares:
        return self.inner.entity_shares(namespace)


def record_pass(services: Services, queries: Sequence[str], top_k: int) -> None:
    """Recall each query once with the query embedder recording and a RecordOnlyIndex: the timed passes then find
    every query vector, and the measured index has not answered these queries before."""
    embedder = services.embedder
    if not isinstance(embedder, PrecomputedQueryEmbedder) or not isinstance(services.index, SqliteSearchIndex):
        raise TypeError("the latency bench runs on the embedded backend with a PrecomputedQueryEmbedder")
    recorder = RecallService(
        services.store,
        RecordOnlyIndex(services.index),
        embedder,
        services.clock,
        services.recaller.tuning,
        services.recaller.relevance_floor,
    )
    embedder.recording = True
    try:
        for q in queries:
            recorder.recall(TARGET_NAMESPACE, RecallQuery(query=q, top_k=top_k))
    finally:
        embedder.recording = False


def time_recalls(services: Services, queries: Sequence[str], top_k: int) -> tuple[list[float], int]:
    millis: list[float] = []
    parsed = 0
    for q in queries:
        t0 = time.perf_counter()
        resp = services.recaller.recall(TARGET_NAMESPACE, RecallQuery(query=q, top_k=top_k))
        millis.append((time.perf_counter() - t0) * 1000)
        parsed += int(resp.time_range is not None)
    return millis, parsed


def stage_times(services: Services, queries: Sequence[str], top_k: int) -> dict[str, dict[str, float]]:
    """Each recall stage's own time from explain traces of the queries, in pipeline order: where the time goes. A
    stage that only runs when it applies (time answers, say) counts only the queries it ran for."""
    per_stage: dict[str, list[float]] = {}
    for q in queries:
        trace = services.recaller.recall(TARGET_NAMESPACE, RecallQuery(query=q, top_k=top_k, explain=True)).trace
        for stage in trace.stages if trace is not None else []:
            per_stage.setdefault(stage.stage, []).append(stage.millis)
    return {
        name: {"runs": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95)}
        for name, values in per_stage.items()
    }


def fts_match(table: FtsTable, text: str) -> str | None:
    """The MATCH expression the SQLite adapter builds: any of the query terms (and, in the shared table, the
    namespace's token)."""
    terms = query_terms(text)
    return table.match(terms, "search_text") if terms else None


def settle_writes(data_dir: Path) -> None:
    """Checkpoint the database's WAL into the main file and flush the dirty pages to disk."""
    conn = sqlite3.connect(data_dir / DB_FILENAME)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    finally:
        conn.close()
    os.sync()


def time_bare(conn: sqlite3.Connection, matches: Sequence[str | None], sql: str) -> list[float]:
    millis: list[float] = []
    for match in matches:
        t0 = time.perf_counter()
        if match is not None:
            conn.execute(sql, (match,)).fetchall()
        millis.append((time.perf_counter() - t0) * 1000)
    return millis


# On the full-text table the adapter reads for the namespace: its own once it is large (namespace_fts).
BARE_SQL = "SELECT rowid FROM {fts} WHERE {fts} MATCH ? LIMIT 50"
BARE_RANKED_SQL = "SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY bm25({fts}) LIMIT 50"


def run(args: argparse.Namespace, data_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    plan = Plan.make(args.total, args.in_namespace)
    write_path_limit = min(args.write_path, args.total)
    clock = ManualClock(START)
    embedder = PrecomputedQueryEmbedder(HashingEmbedder(dim=512))
    settings = with_params(Settings(embedder="hashing", data_dir=data_dir), args.param)
    services = build(settings, clock=clock, embedder=embedder)
    generator = SentenceGenerator(seed=args.seed)
    log(
        f"ingesting {args.total:,} episodes ({len(plan.namespaces)} namespaces; {args.in_namespace:,} in "
        f"{TARGET_NAMESPACE}); write path for the first {min(write_path_limit, args.total):,}"
    )
    t0 = time.perf_counter()
    stats = ingest(services, clock, plan, generator, write_path_limit, log)
    ingest_wall = time.perf_counter() - t0
    log(f"ingested in {ingest_wall:.0f}s; rss {rss_gib():.2f} GiB")

    # The ingest leaves gigabytes of WAL and dirty pages behind; writing them out while queries are timed would
    # measure the disk, not recall. Checkpoint and flush first.
    t0 = time.perf_counter()
    settle_writes(data_dir)
    log(f"checkpointed the WAL and flushed dirty pages in {time.perf_counter() - t0:.0f}s")

    clock.set(START + SPAN + timedelta(days=1))
    queries = make_queries(services, args.in_namespace, args.queries, seed=args.seed + 7)
    stage_queries = make_queries(services, args.in_namespace, args.queries, seed=args.seed + 8)
    warm_queries = make_queries(services, args.in_namespace, args.queries, seed=args.seed + 9)
    # Untimed passes. The first records the vectors of the queries to time without searching (see RecordOnlyIndex).
    # The second loads the measured index's vector cache, SQLite's pages and term counts with other queries of the
    # same kind, as a server that has been answering for a while has them.
    record_pass(services, [*queries, *stage_queries], args.top_k)
    time_recalls(services, warm_queries, args.top_k)
    misses_before = embedder.misses
    recall_ms, parsed = time_recalls(services, queries, args.top_k)
    stages = stage_times(services, stage_queries, args.top_k)
    if embedder.misses != misses_before:
        raise RuntimeError("a query was embedded during the timed passes: the latency would include it")

    conn = sqlite3.connect(data_dir / DB_FILENAME)
    table = fts_table(conn, "episodic", TARGET_NAMESPACE)
    matches = [fts_match(table, q) for q in queries]
    time_bare(conn, matches, BARE_SQL.format(fts=table.name))  # warm-up
    bare_ms = time_bare(conn, matches, BARE_SQL.format(fts=table.name))
    ranked_ms = time_bare(conn, matches, BARE_RANKED_SQL.format(fts=table.name))
    conn.close()
    rss_after_queries = rss_gib()
    # A server answers every namespace, not one: one recall in each loads all the vector caches.
    t0 = time.perf_counter()
    for namespace, _ in plan.namespaces:
        services.recaller.recall(namespace, RecallQuery(query=queries[0], top_k=args.top_k))
    touch_seconds = time.perf_counter() - t0
    db_bytes = sum(p.stat().st_size for p in data_dir.glob(DB_FILENAME + "*"))
    services.close()

    def summary(values: list[float]) -> dict[str, float]:
        return {p: percentile(values, q) for p, q in (("p50", 50), ("p95", 95), ("p99", 99))} | {
            "mean": sum(values) / len(values)
        }

    return {
        "config": {
            "total": args.total,
            "in_namespace": args.in_namespace,
            "namespaces": len(plan.namespaces),
            "queries": len(queries),
            "top_k": args.top_k,
            "seed": args.seed,
            "embedder": embedder.name,
            "vocabulary": generator.vocabulary_size(),
            "latency_excludes": "query embedding (query vectors precomputed, served from a dict while timed)",
        },
        "ingest": {
            "write_path_episodes": stats.write_path,
            "write_path_seconds": stats.write_seconds,
            "write_path_per_s": stats.write_path / stats.write_seconds if stats.write_seconds else math.nan,
            "write_statuses": dict(stats.statuses),
            "applied_episodes": stats.applied,
            "apply_seconds": stats.apply_seconds,
            "apply_per_s": stats.applied / stats.apply_seconds if stats.apply_seconds else math.nan,
            "generate_seconds": stats.generate_seconds,
            "target_windows": [
                {
                    "size_before": w.size_before,
                    "episodes": w.episodes,
                    "seconds": w.seconds,
                    "per_s": w.episodes / w.seconds if w.seconds else math.nan,
                }
                for w in stats.windows
                if w.namespace == TARGET_NAMESPACE
            ],
            "other_namespaces_write_path": {
                "episodes": sum(w.episodes for w in stats.windows if w.namespace != TARGET_NAMESPACE),
                "seconds": sum(w.seconds for w in stats.windows if w.namespace != TARGET_NAMESPACE),
            },
            "wall_seconds": ingest_wall,
        },
        "latency_ms": {
            "recall": summary(recall_ms),
            "bare_fts5": summary(bare_ms),
            "bare_fts5_ranked": summary(ranked_ms),
        },
        "recall_stages_ms": stages,
        "time_expressions_parsed": parsed,
        "keyword_table": "the namespace's own table" if table.token is None else "the shared table",
        "sample_queries": queries[:5],
        "peak_rss_gib_after_ingest_and_queries": rss_after_queries,
        "peak_rss_gib": rss_gib(),
        "touch_all_namespaces_seconds": touch_seconds,
        "db_bytes": db_bytes,
        "load_average_at_end": os.getloadavg(),
    }


def report(r: dict[str, Any]) -> str:
    cfg, ing, lat = r["config"], r["ingest"], r["latency_ms"]
    out = [
        f"Recall latency: {cfg['total']:,} episodes in {cfg['namespaces']} namespaces, "
        f"{cfg['in_namespace']:,} in {TARGET_NAMESPACE}; {cfg['queries']} queries of 2-6 corpus words, "
        f"top_k {cfg['top_k']}; "
        f"embedder {cfg['embedder']}; vocabulary {cfg['vocabulary']:,} words",
        "",
    ]
    target = f">= {TARGETS['ingest_per_s']:,.0f}/s"
    rows: list[list[object]] = [
        [
            "write_batch x100, all",
            f"{ing['write_path_episodes']:,}",
            f"{ing['write_path_seconds']:.1f}",
            f"{ing['write_path_per_s']:,.0f}",
            target,
        ]
    ]
    for w in ing["target_windows"]:
        end = w["size_before"] + w["episodes"]
        rows.append(
            [
                f"  {TARGET_NAMESPACE} {w['size_before']:,}..{end:,}",
                f"{w['episodes']:,}",
                f"{w['seconds']:.1f}",
                f"{w['per_s']:,.0f}",
                target,
            ]
        )
    other = ing["other_namespaces_write_path"]
    if other["episodes"]:
        rows.append(
            [
                f"  other namespaces (<= {OTHER_NAMESPACE_SIZE:,} each)",
                f"{other['episodes']:,}",
                f"{other['seconds']:.1f}",
                f"{other['episodes'] / other['seconds']:,.0f}",
                target,
            ]
        )
    if ing["applied_episodes"]:
        rows.append(
            [
                f"store.apply x{APPLY_BATCH} (bulk load)",
                f"{ing['applied_episodes']:,}",
                f"{ing['apply_seconds']:.1f}",
                f"{ing['apply_per_s']:,.0f}",
                "-",
            ]
        )
    out.append(format_table(["ingest", "episodes", "seconds", "episodes/s", "target"], rows))
    statuses = ", ".join(f"{k} {v:,}" for k, v in sorted((ing["write_statuses"] or {}).items()))
    out.append(f"  write statuses: {statuses}; data generation {ing['generate_seconds']:.0f}s (not counted)")
    if ing["applied_episodes"]:
        out.append(
            f"  note: only the first {ing['write_path_episodes']:,} episodes went through the write path; "
            "the rest was bulk-loaded through store.apply (same episodes, same embedder) to save time"
        )
    out.append("")
    bare_p95 = lat["bare_fts5"]["p95"]
    lrows: list[list[object]] = []
    for name, key in (
        ("recaller.recall (excl. embedding)", "recall"),
        ("bare FTS5 MATCH LIMIT 50", "bare_fts5"),
        ("bare FTS5 ORDER BY bm25 LIMIT 50", "bare_fts5_ranked"),
    ):
        v = lat[key]
        lrows.append([name, v["p50"], v["p95"], v["p99"], v["mean"], v["p95"] / bare_p95 if bare_p95 else math.nan])
    out.append(
        format_table(
            ["query", "p50 ms", "p95 ms", "p99 ms", "mean ms", "p95 / bare"],
            lrows,
            title=f"== latency on {TARGET_NAMESPACE} ({cfg['in_namespace']:,} episodes) ==",
        )
    )
    recall_p95 = lat["recall"]["p95"]
    ratio = recall_p95 / bare_p95 if bare_p95 else math.nan
    out.append(
        f"  targets: recall p95 {recall_p95:.1f} ms (<= {TARGETS['p95_ms']:.0f}: "
        f"{'met' if recall_p95 <= TARGETS['p95_ms'] else 'NOT met'}); p95 ratio to bare FTS5 {ratio:.1f}x "
        f"(<= {TARGETS['ratio_to_bare']:.0f}x: {'met' if ratio <= TARGETS['ratio_to_bare'] else 'NOT met'}); "
        f"to the ranked bare query {recall_p95 / lat['bare_fts5_ranked']['p95']:.1f}x"
    )
    out.append(f"  bare queries on {r.get('keyword_table', 'fts_episodes')}, the full-text table recall reads")
    out.append(f"  queries with a time expression parsed into a filter: {r['time_expressions_parsed']}")
    out.append(f"  sample queries: {r['sample_queries']}")
    out.append("")
    srows = [[name, int(v["runs"]), v["p50"], v["p95"]] for name, v in r["recall_stages_ms"].items()]
    out.append(
        format_table(
            ["stage", "runs", "p50 ms", "p95 ms"],
            srows,
            title=(
                "== where recall's time goes (explain traces of as many other queries of the same kind; a stage "
                "runs where it applies) =="
            ),
        )
    )
    out.append("")
    rss = r["peak_rss_gib"]
    out.append(
        f"peak RSS {r['peak_rss_gib_after_ingest_and_queries']:.2f} GiB after ingest and queries; "
        f"{rss:.2f} GiB after one recall in each of the {cfg['namespaces']} namespaces "
        f"(all vector caches loaded, {r['touch_all_namespaces_seconds']:.0f}s) "
        f"(<= {TARGETS['rss_gib']:.0f} GiB: {'met' if rss <= TARGETS['rss_gib'] else 'NOT met'}); "
        f"database {r['db_bytes'] / 2**30:.2f} GiB"
    )
    load = ", ".join(f"{x:.1f}" for x in r["load_average_at_end"])
    out.append(f"machine load average at the end (1/5/15 min): {load} on {os.cpu_count()} cores")
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total", type=int, default=1_000_000, help="episodes in all namespaces")
    parser.add_argument("--in-namespace", type=int, default=100_000, help="episodes in the queried namespace")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--data-dir", type=Path, default=None, help="where the SQLite file goes (default temp)")
    parser.add_argument("--embedder", choices=["hashing"], default="hashing", help="only hashing (fast, offline)")
    parser.add_argument(
        "--write-path",
        type=int,
        default=100_000,
        help="episodes written through writer.write_batch (target namespace first); the rest go through "
        "store.apply (default 100000: 1M through the write path takes too long on a small machine)",
    )
    parser.add_argument("--seed", type=int, default=42)
    add_param_argument(parser)
    parser.add_argument("--json-out", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if args.data_dir is not None:
        if (args.data_dir / DB_FILENAME).exists():
            log(f"{args.data_dir / DB_FILENAME} exists: give an empty --data-dir")
            return 2
        results = run(args, args.data_dir, log)
    else:
        with tempfile.TemporaryDirectory(prefix="rearview-latency-") as tmp:
            results = run(args, Path(tmp), log)
    print(report(results))
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
