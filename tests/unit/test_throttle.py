"""Per-key throttling: the limit a key gets, the windows, the 429 and its Retry-After, who may set a limit, and one
key's flood never throttling another (service.throttle, domain.quota, AccessService)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from rearview.adapters.in_memory import InMemoryData, InMemoryKeyStore
from rearview.adapters.in_memory_quota import InMemoryRequestQuota
from rearview.clock import ManualClock
from rearview.domain.access import Principal
from rearview.domain.permissions import Permission
from rearview.domain.quota import QuotaWindow, RequestLimit
from rearview.errors import InvalidInput, NamespaceForbidden, NotFound, Throttled, Unauthorized
from rearview.service.access import AccessGate, AccessService
from rearview.service.throttle import RequestThrottle

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 30, 15, tzinfo=UTC)
ADMIN_TOKEN = "admin-token-for-the-throttle-tests"


def make_access(clock: ManualClock, default: int = 5) -> tuple[AccessService, InMemoryRequestQuota, list[str]]:
    quota = InMemoryRequestQuota()
    refused: list[str] = []
    throttle = RequestThrottle(quota, clock, default, on_throttled=refused.append)
    access = AccessService(InMemoryKeyStore(InMemoryData()), clock, admin_token=ADMIN_TOKEN, throttle=throttle)
    return access, quota, refused


def test_a_window_is_the_utc_minute_and_retry_after_counts_to_its_end() -> None:
    window = QuotaWindow.containing(T0)
    assert window.start == datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    assert window.end == datetime(2026, 3, 1, 9, 31, tzinfo=UTC)
    assert window.retry_after(T0) == 45
    assert window.retry_after(window.end - timedelta(milliseconds=1)) == 1, "never 0: the window is not over yet"
    assert QuotaWindow.containing(window.end).start == window.end


def test_the_effective_limit_is_the_keys_own_else_the_default_and_0_is_unlimited() -> None:
    assert RequestLimit.effective(None, 1200) == RequestLimit(1200)
    assert RequestLimit.effective(30, 1200) == RequestLimit(30)
    assert RequestLimit.effective(0, 1200) is None, "a key stated unlimited"
    assert RequestLimit.effective(None, 0) is None, "the default stated unlimited"
    assert RequestLimit.effective(7, 0) == RequestLimit(7), "a key's own limit holds under an unlimited default"
    with pytest.raises(InvalidInput, match="at least 1"):
        RequestLimit(0)


def test_past_the_limit_the_request_is_refused_with_the_limit_and_retry_after_then_the_next_minute_admits() -> None:
    clock = ManualClock(T0)
    access, quota, refused = make_access(clock)
    key, plaintext = access.create_key("acme", ["read"], requests_per_minute=3)
    principal = access.authenticate(f"Bearer {plaintext}")
    for _ in range(3):
        access.admit(principal)
    with pytest.raises(Throttled) as caught:
        access.admit(principal)
    error = caught.value
    assert error.status == 429 and error.code == "throttled"
    assert "3 requests per minute" in error.message and "retry after 45 s" in error.message
    assert error.headers() == {"Retry-After": "45"}
    assert refused == [key.key_id], "the listener (a metric) is told, with the key's id only"
    assert quota.counted(key.key_id, QuotaWindow.containing(T0)) == 3

    clock.set(datetime(2026, 3, 1, 9, 31, tzinfo=UTC))
    access.admit(principal)  # a new window: admitted, no sleeping


def test_one_keys_flood_never_throttles_another_key() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock, default=4)
    flooding = access.authenticate("Bearer " + access.create_key("acme", ["write"])[1])
    quiet = access.authenticate("Bearer " + access.create_key("globex", ["write"])[1])
    same_tenant = access.authenticate("Bearer " + access.create_key("acme", ["read"])[1])
    for _ in range(4):
        access.admit(flooding)
    for _ in range(50):
        with pytest.raises(Throttled):
            access.admit(flooding)
    for principal in (quiet, same_tenant):  # counted per key, not per tenant or namespace
        for _ in range(4):
            access.admit(principal)


def test_the_open_mode_is_not_counted_and_the_admin_token_is() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock, default=2)
    for _ in range(10):
        access.admit(Principal.open_local())
    admin = access.authenticate(f"Bearer {ADMIN_TOKEN}")
    access.admit(admin)
    access.admit(admin)
    with pytest.raises(Throttled):
        access.admit(admin)


def test_an_unlimited_key_is_never_refused_and_no_throttle_means_no_limit() -> None:
    clock = ManualClock(T0)
    access, quota, _ = make_access(clock, default=1)
    key, plaintext = access.create_key("acme", ["read"], requests_per_minute=0)
    principal = access.authenticate(f"Bearer {plaintext}")
    for _ in range(100):
        access.admit(principal)
    assert quota.counted(key.key_id, QuotaWindow.containing(T0)) == 0, "nothing counted for an unlimited key"
    unthrottled = AccessService(InMemoryKeyStore(InMemoryData()), clock)
    for _ in range(100):
        unthrottled.admit(principal)


def test_the_gate_admits_after_authenticating() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock, default=1)
    plaintext = access.create_key("acme", ["read"])[1]
    gate = AccessGate(access)
    principal = gate.principal(f"Bearer {plaintext}")
    assert gate.admit(principal) == principal
    with pytest.raises(Throttled):
        gate.admit(principal)


def test_a_keys_limit_travels_through_the_authorizer_context_and_a_bad_one_fails_closed() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock)
    limited = access.authenticate("Bearer " + access.create_key("acme", ["read"], requests_per_minute=9)[1])
    default = access.authenticate("Bearer " + access.create_key("acme", ["read"])[1])
    assert limited.authorizer_context()["requests_per_minute"] == "9"
    assert "requests_per_minute" not in default.authorizer_context()
    assert Principal.from_authorizer_context(limited.authorizer_context()) == limited
    assert Principal.from_authorizer_context(default.authorizer_context()) == default
    for bad in ("-1", "nine", "1000001", "1.5"):
        with pytest.raises(Unauthorized, match="requests_per_minute"):
            Principal.from_authorizer_context({**limited.authorizer_context(), "requests_per_minute": bad})


def test_a_keys_limit_is_set_at_creation_and_changed_later_within_bounds() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock)
    key, _ = access.create_key("acme", ["read"], requests_per_minute=10)
    assert key.requests_per_minute == 10
    assert access.set_requests_per_minute(key.key_id, 0).requests_per_minute == 0
    assert access.set_requests_per_minute(key.key_id, None).requests_per_minute is None
    for bad in (-1, 1_000_001):
        with pytest.raises(InvalidInput, match="requests_per_minute: must be an integer from 0"):
            access.create_key("acme", ["read"], requests_per_minute=bad)
        with pytest.raises(InvalidInput, match="requests_per_minute"):
            access.set_requests_per_minute(key.key_id, bad)
    with pytest.raises(NotFound):
        access.set_requests_per_minute("0123456789abcdef", 5)


def test_a_tenants_admin_key_grants_no_more_than_its_own_limit() -> None:
    clock = ManualClock(T0)
    access, _, _ = make_access(clock, default=100)
    admin_key, admin_plaintext = access.create_key("acme", ["admin", "read"], requests_per_minute=50)
    tenant_admin = access.authenticate(f"Bearer {admin_plaintext}")
    child, _ = access.create_key_as(tenant_admin, "acme:bot", ["read"], requests_per_minute=20)
    for too_much in (0, 51, None):  # unlimited, above its own, the default (100) above its own
        with pytest.raises(NamespaceForbidden, match=r"more than its own limit \(50 requests per minute\)"):
            access.create_key_as(tenant_admin, "acme:bot", ["read"], requests_per_minute=too_much)
        with pytest.raises(NamespaceForbidden, match="more than its own limit"):
            access.set_requests_per_minute_as(tenant_admin, child.key_id, too_much)
    with pytest.raises(NamespaceForbidden, match="more than its own limit"):
        access.set_requests_per_minute_as(tenant_admin, admin_key.key_id, 500)  # lifting its own limit
    assert access.set_requests_per_minute_as(tenant_admin, child.key_id, 50).requests_per_minute == 50
    other_tenant, _ = access.create_key("globex", ["read"])
    with pytest.raises(NotFound):
        access.set_requests_per_minute_as(tenant_admin, other_tenant.key_id, 1)
    reader = access.authenticate("Bearer " + access.create_key("acme", ["read"])[1])
    with pytest.raises(NamespaceForbidden, match="admin"):
        access.set_requests_per_minute_as(reader, child.key_id, 1)
    operator = access.authenticate(f"Bearer {ADMIN_TOKEN}")
    assert access.set_requests_per_minute_as(operator, child.key_id, 0).requests_per_minute == 0


class CountingTakes(InMemoryRequestQuota):
    """The in-memory counter, telling how many times it was written (each `take` that counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def take(self, key_id: str, window: QuotaWindow, limit: int, count: int = 1) -> bool:
        taken = super().take(key_id, window, limit, count)
        self.writes += taken
        return taken


def _principal(limit: int) -> Principal:
    return Principal(
        key_id="0123456789abcdef", scope="acme", permissions=frozenset({Permission.READ}), requests_per_minute=limit
    )


def test_a_busy_process_counts_its_requests_in_leases_and_a_few_writes() -> None:
    clock, quota = ManualClock(T0), CountingTakes()
    throttle = RequestThrottle(quota, clock, 1200)
    principal = _principal(1200)
    for _ in range(500):
        throttle.admit(principal)
    window = QuotaWindow.containing(T0)
    # Leases of 1, 2, 4, 8, 16, then 24 (1/50 of the limit) at a time: 500 requests counted in 26 writes.
    assert quota.writes == 5 + math.ceil((500 - 31) / 24)
    assert 500 <= quota.counted(principal.key_id, window) < 500 + 24, "what is counted is at most a lease ahead"


def test_processes_sharing_a_counter_never_admit_past_the_limit_and_end_exact() -> None:
    clock, quota = ManualClock(T0), CountingTakes()
    principal = _principal(300)  # leases up to 6
    throttles = [RequestThrottle(quota, clock, 1200) for _ in range(3)]
    admitted = refused = 0
    for i in range(600):
        try:
            throttles[i % 3].admit(principal)
            admitted += 1
        except Throttled:
            refused += 1
    assert quota.counted(principal.key_id, QuotaWindow.containing(T0)) == 300, "the counter stops at the limit"
    # What the processes admit is what they counted, less what they still hold: at most a lease each (6).
    assert 300 - 3 * 6 <= admitted <= 300 and admitted + refused == 600


def test_a_lease_never_outlives_its_window() -> None:
    clock, quota = ManualClock(T0), CountingTakes()
    throttle = RequestThrottle(quota, clock, 1200)
    principal = _principal(150)  # leases up to 3
    for _ in range(4):
        throttle.admit(principal)  # leases of 1, 2 and 3: 6 counted, 4 admitted
    clock.set(datetime(2026, 3, 1, 9, 31, tzinfo=UTC))
    throttle.admit(principal)
    assert quota.counted(principal.key_id, QuotaWindow.containing(clock.now())) == 1, "counted anew, lease of 1"
    clock.set(T0)  # a clock that went back: the earlier window again, counted anew, never from the later lease
    throttle.admit(principal)
    assert quota.counted(principal.key_id, QuotaWindow.containing(T0)) == 6 + 1
