"""Retention (rearview.service.retention): policies kept by every backend, inherited down the namespace tree, and
enforced by the sweep through the forget path; the purge of expired working memory; the local timer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rearview.adapters.in_memory_retention import InMemoryRetentionPolicies
from rearview.adapters.sqlite import SqliteDatabase, SqliteRetentionPolicies
from rearview.bootstrap import Services, build, local_maintenance
from rearview.clock import ManualClock
from rearview.domain.consolidate import ConsolidateRequest
from rearview.domain.retention import RetentionPolicy
from rearview.domain.search import MemoryFilter
from rearview.domain.working import WorkingWrite
from rearview.domain.write import MemoryWrite
from rearview.ports import RetentionPolicies
from rearview.service.maintenance import PeriodicTasks
from rearview.settings import RetentionSettings, Settings

# The start of the `clock` fixture (tests/conftest.py), named here: `conftest` is not one module in a whole run.
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)

pytestmark = pytest.mark.unit


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def policies(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RetentionPolicies]:
    if request.param == "memory":
        yield InMemoryRetentionPolicies()
    elif request.param == "sqlite":
        db = SqliteDatabase(tmp_path / "rearview.db", embedder_name=None, dim=None)
        yield SqliteRetentionPolicies(db)
        db.close()
    else:
        import boto3
        from moto import mock_aws

        from rearview.adapters.dynamodb import create_table
        from rearview.adapters.dynamodb.retention_policies import DynamoDBRetentionPolicies

        with mock_aws():
            client = boto3.client("dynamodb", region_name="eu-west-1")
            create_table(client, "rearview")
            yield DynamoDBRetentionPolicies("rearview", client=client)


def test_every_backend_keeps_policies(policies: RetentionPolicies) -> None:
    policy = RetentionPolicy(episode_max_age_days=365, archive_after_days=30, keep_accessed_at_least=3)
    assert policies.get("acme") is None and policies.all() == {}
    policies.put("acme", policy, T0)
    policies.put("acme:u-1", RetentionPolicy(episode_max_age_days=7), T0)
    assert policies.get("acme") == (policy, T0)
    assert set(policies.all()) == {"acme", "acme:u-1"}
    assert policies.delete("acme:u-1") and not policies.delete("acme:u-1")
    assert set(policies.all()) == {"acme"}


def test_an_archive_age_past_the_max_age_is_refused() -> None:
    with pytest.raises(ValidationError, match="archive_after_days: must be less than episode_max_age_days"):
        RetentionPolicy(episode_max_age_days=30, archive_after_days=90)


def test_a_policy_governs_the_namespaces_under_it(services: Services) -> None:
    services.retention.set_policy("acme", RetentionPolicy(episode_max_age_days=90))
    under = services.retention.policy("acme:u-1:proj")
    assert under.set_on == "acme" and under.policy is not None and under.policy.episode_max_age_days == 90
    assert services.retention.policy("acme2").policy is None
    services.retention.set_policy("acme:u-1", RetentionPolicy(episode_max_age_days=7))
    assert services.retention.policy("acme:u-1:proj").set_on == "acme:u-1"
    assert services.retention.clear_policy("acme:u-1").set_on == "acme"


def _write(services: Services, clock: ManualClock, content: str, days_ago: float, **extra: Any) -> str:
    when = clock.now() - timedelta(days=days_ago)
    return services.writer.write("acme:u-1", MemoryWrite(content=content, occurred_at=when, **extra)).id


def test_the_sweep_forgets_archives_and_keeps(services: Services, clock: ManualClock) -> None:
    ancient = _write(services, clock, "Flew to Lisbon for the Web Summit keynote", 400)
    recalled = _write(services, clock, "The user is allergic to peanuts, said at the clinic", 400)
    services.store.record_access("acme:u-1", [recalled] * 1, clock.now())
    services.store.record_access("acme:u-1", [recalled], clock.now())
    old = _write(services, clock, "Booked the ferry to Naxos for the June holiday", 60)
    fresh = _write(services, clock, "Ordered the vegan menu for the March offsite", 1)
    services.consolidation.consolidate("acme:u-1", ConsolidateRequest())  # marks the episodes consolidated
    services.retention.set_policy(
        "acme", RetentionPolicy(episode_max_age_days=365, archive_after_days=30, keep_accessed_at_least=2)
    )

    sweep = services.retention.sweep()

    assert services.store.get("acme:u-1", ancient) is None
    assert services.store.get("acme:u-1", old) is None  # archived: consolidated and past 30 days
    assert services.store.get("acme:u-1", recalled) is not None  # recalled twice: kept
    assert services.store.get("acme:u-1", fresh) is not None
    [report] = sweep.namespaces
    assert (report.set_on, report.forgotten, report.archived, report.kept) == ("acme", 1, 1, 1)


def test_unconsolidated_episodes_wait_for_a_run_before_they_are_archived(
    services: Services, clock: ManualClock
) -> None:
    waiting = _write(services, clock, "Booked the ferry to Naxos for the June holiday", 60)
    services.retention.set_policy("acme:u-1", RetentionPolicy(archive_after_days=30))
    services.retention.sweep()
    assert services.store.get("acme:u-1", waiting) is not None


def test_expired_working_memory_is_purged(services: Services, clock: ManualClock) -> None:
    services.working.put("acme", "s-1", "plan", WorkingWrite(value={"step": 1}, ttl_seconds=60))
    services.working.put("acme", "s-2", "plan", WorkingWrite(value={"step": 2}, ttl_seconds=3600))
    clock.advance(minutes=5)
    assert services.retention.sweep().working_purged == 1
    assert services.working.get("acme", "s-2").entries == {"plan": {"step": 2}}


def test_the_local_timer_runs_both_tasks_and_survives_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(
        data_dir=tmp_path / "d",
        embedder="hashing",
        retention=RetentionSettings(sweep_minutes=0.001, working_purge_minutes=0),
    )
    services = build(settings)
    sweep, swept_twice, runs = services.retention.sweep, threading.Event(), [0]

    def counted() -> object:
        runs[0] += 1
        if runs[0] >= 2:
            swept_twice.set()
        return sweep()

    monkeypatch.setattr(services.retention, "sweep", counted)
    try:
        with local_maintenance(services) as tasks:
            assert swept_twice.wait(timeout=10)  # at start, then again 60 ms later: waits on the event, no sleep
        assert [t.name for t in tasks.tasks] == ["retention sweep"] and tasks.tasks[0].runs >= 2
    finally:
        services.close()
    failing = PeriodicTasks()
    failing.add("boom", 60, lambda: 1 / 0)
    failing.run_now()
    assert failing.tasks[0].failures == 1


def test_a_sweep_out_of_time_stops_and_the_next_hours_reach_every_namespace(
    services: Services, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespaces = [f"acme:u-{n}" for n in range(4)]
    for namespace in namespaces:
        when = clock.now() - timedelta(days=400)
        services.writer.write(namespace, MemoryWrite(content=f"Flew to Lisbon with {namespace}", occurred_at=when))
    services.retention.set_policy("acme", RetentionPolicy(episode_max_age_days=365))
    read: list[str] = []  # namespaces the sweep has looked into
    list_memories = services.store.list_memories

    def listing(namespace: str, *args: Any, **kwargs: Any) -> Any:
        read.append(namespace)
        return list_memories(namespace, *args, **kwargs)

    monkeypatch.setattr(services.store, "list_memories", listing)
    swept: list[str] = []
    for _ in namespaces:
        read.clear()
        # Time to look into two namespaces, to finish one: the second is cut short before it deletes anything.
        sweep = services.retention.sweep(lambda: len(set(read)) >= 2)
        assert sweep.unfinished == len(namespaces) - 2
        swept += [report.namespace for report in sweep.namespaces]
        clock.advance(hours=1)
    assert sorted(swept) == namespaces  # each hour starts elsewhere: none is starved
    assert services.retention.sweep().unfinished == 0
    assert all(services.store.list_memories(ns, MemoryFilter(layers=("episodic",))) == [] for ns in namespaces)
