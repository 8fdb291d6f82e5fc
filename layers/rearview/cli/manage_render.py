"""Rich renderings of the memory-by-hand results: a page of memories, one memory, its history, an erase receipt."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from rearview.cli.render import described_memory, memory_table, when
from rearview.domain.erase import EraseReceipt
from rearview.domain.history import MemoryHistory
from rearview.domain.listing import MemoryPage
from rearview.domain.memory import Fact, Memory

_SNIPPET = 90


def _what(memory: Memory) -> str:
    if isinstance(memory, Fact):
        status = "" if memory.status == "active" else f", {memory.status}"
        return f"{memory.kind} {memory.confidence:.2f}{status}"
    return memory.event_type or "episode"


def memory_page(page: MemoryPage) -> RenderableType:
    title = f"Memories ({len(page.items)})"
    if page.scanned is not None:
        title += f", of {page.scanned} read"
    table = memory_table(title, ("when",))
    for memory in page.items:
        content = memory.content if len(memory.content) <= _SNIPPET else memory.content[: _SNIPPET - 1] + "…"
        edited = f" · v{memory.version}" if memory.version > 1 else ""
        table.add_row(when(memory.occurred_at), described_memory(content, f"{_what(memory)}{edited} · {memory.id}"))
    if page.next_cursor is None:
        return table
    return Group(table, Text(f"next page: --cursor {page.next_cursor}", style="dim"))


def memory_detail(memory: Memory) -> RenderableType:
    table = Table(title=f"Memory {memory.id} (version {memory.version})", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    table.add_row("layer", memory.layer)
    table.add_row("what", _what(memory))
    table.add_row("when", when(memory.occurred_at))
    table.add_row("content", memory.content)
    table.add_row("tags", ", ".join(memory.tags) or "-")
    table.add_row("importance", f"{memory.importance:.2f}")
    if isinstance(memory, Fact):
        table.add_row("dimension", memory.dimension or "-")
        table.add_row("provenance", ", ".join(memory.provenance) or "-")
    table.add_row("redacted", "yes" if memory.redacted else "no")
    return table


def memory_history(history: MemoryHistory) -> RenderableType:
    table = memory_table(f"History of {history.memory_id}", ("when",))
    for entry in history.versions:
        how = entry.changed_by if entry.relation == "version" else f"superseded fact {entry.memory.id}"
        by = f" by {entry.actor}" if entry.actor else ""
        table.add_row(when(entry.changed_at), described_memory(entry.memory.content, f"v{entry.version} · {how}{by}"))
    return table


def erase_receipt(receipt: EraseReceipt) -> RenderableType:
    table = Table(title=f"Erased {receipt.namespace}" + (" and below" if receipt.subtree else ""), title_justify="left")
    for column in ("namespace", "working", "episodic", "semantic", "versions", "ledger", "index"):
        table.add_column(column)
    for namespace, counts in sorted(receipt.namespaces.items()):
        table.add_row(
            namespace,
            *(
                str(getattr(counts, name))
                for name in ("working", "episodic", "semantic", "versions", "ledger", "index")
            ),
        )
    if not receipt.keys_revoked:
        return table
    return Group(table, Text(f"API keys revoked: {', '.join(receipt.keys_revoked)}"))
