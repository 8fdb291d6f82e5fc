"""The domain: entities and value types, free of I/O. Every other package imports from here; this package imports
nothing of Rearview but `rearview.errors`.

- `timestamps`: UTC datetimes (the only kind the domain holds)
- `namespaces`: namespace names and their nesting
- `limits`: the size limits and patterns every edge enforces
- `memory`: the three layers: `Episode`, `Fact`, `WorkingEntry`
- `write`, `recall`, `forget`, `consolidate`, `stats`: each operation's request and result
- `search`: `MemoryFilter`, `Candidate`, `EntityShares`, `SearchTraits`: what the searches take and give
- `changes`: `ChangeSet` (what a write applies to a store) and `IndexChange` (what reaches a separate index)
- `permissions`, `access`: API keys, principals and what they may do
"""
