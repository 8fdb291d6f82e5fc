"""The mem0-compatible API: mem0 platform's routes (what `mem0ai`'s `MemoryClient(host=...)` calls), each a row like
every other operation, tagged `mem0` in the OpenAPI document. The catalogue (`rearview.operations.catalogue`)
includes them; how mem0's entities map onto namespaces is `rearview.domain.mem0`'s docstring.

These routes have no `{ns}` in their path: the namespace comes from the entities a request names (or from the
memory id, which carries it), so the route checks only the permission and each operation checks the caller's access
to the namespace it found (`rearview.service.mem0_api`), as the key routes check scopes in their service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rearview.domain.permissions import Permission
from rearview.operations.offers import Catalogue, Http

if TYPE_CHECKING:
    from rearview.bootstrap import Services
    from rearview.domain.access import Principal
    from rearview.domain.mem0 import (
        EntityParameter,
        Mem0Add,
        Mem0Added,
        Mem0Done,
        Mem0Found,
        Mem0HistoryEntry,
        Mem0IdParameter,
        Mem0List,
        Mem0Memory,
        Mem0Page,
        Mem0Ping,
        Mem0Search,
        Mem0Update,
        PageParameter,
        PageSizeParameter,
        RunParameter,
    )
    from rearview.service.mem0_api import Mem0Api

MEM0_OPERATIONS = Catalogue()
operation = MEM0_OPERATIONS.operation

TAG = "mem0"
MEMORIES = "/v1/memories/"
MEMORY = "/v1/memories/{id}/"
READ, WRITE, FORGET = Permission.READ, Permission.WRITE, Permission.FORGET


def _api(s: Services) -> Mem0Api:
    from rearview.service.mem0_api import Mem0Api

    return Mem0Api(
        writer=s.writer,
        recaller=s.recaller,
        listing=s.listing,
        editor=s.editor,
        history=s.history,
        forgetter=s.forgetter,
        access=s.access,
        default_namespace=s.settings.default_namespace,
    )


@operation(READ, Http("GET", "/v1/ping/", "recall", TAG))
def mem0_ping(s: Services, caller: Principal) -> Mem0Ping:
    """mem0: check the API key (its clients call this first): the organisation is this deployment, the project the
    namespace the caller's entities go under"""
    return _api(s).ping(caller)


@operation(WRITE, Http("POST", MEMORIES, "write", TAG))
def mem0_add(s: Services, caller: Principal, request: Mem0Add) -> Mem0Added:
    """mem0 (v1): remember messages, each an episode of the entities' namespace"""
    return _api(s).add(caller, request)


@operation(WRITE, Http("POST", "/v3/memories/add/", "write", TAG))
def mem0_add_v3(s: Services, caller: Principal, request: Mem0Add) -> Mem0Added:
    """mem0 (v3): remember messages, each an episode of the entities' namespace"""
    return _api(s).add(caller, request)


@operation(READ, Http("POST", "/v3/memories/search/", "recall", TAG))
def mem0_search(s: Services, caller: Principal, request: Mem0Search) -> Mem0Found:
    """mem0 (v3): search the entities' memories (Rearview's recall)"""
    return _api(s).search(caller, request)


@operation(READ, Http("POST", "/v1/memories/search/", "recall", TAG))
def mem0_search_v1(s: Services, caller: Principal, request: Mem0Search) -> Mem0Found:
    """mem0 (v1): search the entities' memories (Rearview's recall)"""
    return _api(s).search(caller, request)


@operation(READ, Http("POST", "/v3/memories/", "recall", TAG))
def mem0_list(
    s: Services, caller: Principal, request: Mem0List, page: PageParameter = 1, page_size: PageSizeParameter = 100
) -> Mem0Page:
    """mem0 (v3): the entities' memories, newest first, by page"""
    return _api(s).page(caller, request, page, page_size)


@operation(READ, Http("GET", MEMORY, "recall", TAG))
def mem0_get(s: Services, caller: Principal, memory_id: Mem0IdParameter) -> Mem0Memory:
    """mem0: one memory by id"""
    return _api(s).get(caller, memory_id)


@operation(WRITE, Http("PUT", MEMORY, "write", TAG))
def mem0_update(s: Services, caller: Principal, memory_id: Mem0IdParameter, update: Mem0Update) -> Mem0Memory:
    """mem0: change a memory's text (an edit: the old text stays in its history)"""
    return _api(s).update(caller, memory_id, update)


@operation(FORGET, Http("DELETE", MEMORY, "forget", TAG))
def mem0_delete(s: Services, caller: Principal, memory_id: Mem0IdParameter) -> Mem0Done:
    """mem0: forget one memory"""
    return _api(s).delete(caller, memory_id)


@operation(FORGET, Http("DELETE", MEMORIES, "forget", TAG))
def mem0_delete_all(
    s: Services,
    caller: Principal,
    user_id: EntityParameter = None,
    agent_id: EntityParameter = None,
    app_id: EntityParameter = None,
    run_id: RunParameter = None,
) -> Mem0Done:
    """mem0: forget every memory of the entities (of one run, with run_id)"""
    from rearview.domain.mem0 import Entities

    entities = Entities(user_id=user_id, agent_id=agent_id, app_id=app_id, run_id=run_id)
    return _api(s).delete_all(caller, entities)


@operation(READ, Http("GET", "/v1/memories/{id}/history/", "recall", TAG))
def mem0_history(s: Services, caller: Principal, memory_id: Mem0IdParameter) -> list[Mem0HistoryEntry]:
    """mem0: how a memory changed, oldest first"""
    return _api(s).history(caller, memory_id)
