"""Which index the emulated functions search: a real OpenSearch node when one is reachable, else the embedded index
(`aws.search` `embedded`: the SQLite index `make run` searches, kept in step by index sync in the same way).

- `auto` (the default): OpenSearch at OPENSEARCH_URL if it answers, else the embedded index;
- `opensearch`: OpenSearch at OPENSEARCH_URL, waiting for it to answer (compose starts it beside the emulator);
  the emulator does not start without it;
- `embedded`: the embedded index, whatever OPENSEARCH_URL says.

Either way the choice and its reason go into the start-up announcement.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal

from rearview.errors import ConfigurationError

SearchMode = Literal["auto", "opensearch", "embedded"]
# How long `opensearch` waits for the node (a container's JVM takes tens of seconds); `auto` asks once.
WAIT_SECONDS = 180.0
PROBE_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True)
class SearchChoice:
    kind: Literal["opensearch", "embedded"]
    url: str | None
    banner: str


def opensearch_version(url: str, timeout: float = PROBE_TIMEOUT_SECONDS) -> str | None:
    """The version the node at `url` reports, or None when it does not answer as OpenSearch."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/", timeout=timeout) as response:
            body = json.load(response)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    version = body.get("version", {}) if isinstance(body, dict) else {}
    if version.get("distribution") != "opensearch":
        return None
    return str(version.get("number", "?"))


def choose_search(mode: SearchMode, url: str | None, *, wait_seconds: float = WAIT_SECONDS) -> SearchChoice:
    """The index to search, as `mode` and OPENSEARCH_URL (`url`) decide; ConfigurationError when `opensearch`
    cannot be had."""
    embedded = SearchChoice("embedded", None, "search: the embedded index (SQLite FTS5 BM25 + exact k-NN)")
    if mode == "embedded":
        return embedded
    if not url:
        if mode == "opensearch":
            raise ConfigurationError("search: opensearch needs OPENSEARCH_URL", field="search")
        return SearchChoice(embedded.kind, None, embedded.banner + "; set OPENSEARCH_URL for a real node")
    deadline = time.monotonic() + (wait_seconds if mode == "opensearch" else 0.0)
    while True:
        version = opensearch_version(url)
        if version is not None:
            return SearchChoice("opensearch", url, f"search: OpenSearch {version} at {url}")
        if time.monotonic() >= deadline:
            break
        time.sleep(1.0)
    if mode == "opensearch":
        raise ConfigurationError(f"search: no OpenSearch answers at {url}", field="search")
    return SearchChoice(embedded.kind, None, f"{embedded.banner}; OPENSEARCH_URL={url} does not answer")
