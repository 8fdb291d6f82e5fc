"""The test OpenSearch node's failure paths: whatever keeps it from starting is a NodeUnavailable saying why (the
fixture turns it into a skip). Stand-in `mvn` and `java` scripts on PATH play the failures; nothing is fetched."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import opensearch_node
from support.opensearch_node import NodeUnavailable, OpenSearchCluster

pytestmark = pytest.mark.unit


def _tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **scripts: str) -> None:
    """A PATH holding only these tools, each a shell script."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in scripts.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_without_maven_the_node_is_unavailable_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path, monkeypatch, java="exit 0")

    with pytest.raises(NodeUnavailable, match="no `mvn` on PATH"):
        opensearch_node.assemble(tmp_path / "cache")


def test_a_failed_download_reports_what_maven_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path, monkeypatch, java="exit 0", mvn="echo '[ERROR] Could not transfer artifact' >&2; exit 1")

    with pytest.raises(NodeUnavailable, match=r"(?s)exit 1\).*Could not transfer artifact"):
        opensearch_node.assemble(tmp_path / "cache")

    assert not (tmp_path / "cache" / opensearch_node._home_name()).exists(), "nothing half-made is kept"


def test_a_download_past_its_time_gives_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path, monkeypatch, java="exit 0", mvn="exec /bin/sleep 30")

    with pytest.raises(NodeUnavailable, match="took over 0 s"):
        opensearch_node.assemble(tmp_path / "cache", timeout=0.3)


def test_an_assembled_home_is_reused_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "cache" / opensearch_node._home_name()
    home.mkdir(parents=True)
    (home / ".assembled").write_text("{}")
    _tools(tmp_path, monkeypatch)

    assert opensearch_node.assemble(tmp_path / "cache") == home


def test_a_node_that_exits_at_start_is_unavailable_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch, java="echo 'java.lang.RuntimeException: can not run opensearch as root'; exit 1")
    monkeypatch.setattr(opensearch_node.tempfile, "tempdir", str(tmp_path))

    with pytest.raises(NodeUnavailable, match=r"(?s)exited with 1.*can not run opensearch as root"):
        opensearch_node.start(tmp_path / "home", timeout=10)

    assert not list(tmp_path.glob("rearview-opensearch-*")), "its directory is removed"


def test_a_node_that_never_answers_is_stopped_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch, java="exec /bin/sleep 30")

    with pytest.raises(NodeUnavailable, match="not ready within 1 s"):
        opensearch_node.start(tmp_path / "home", timeout=1)


def test_the_environment_names_an_external_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENSEARCH_URL", "OPENSEARCH_SERVICE", "OPENSEARCH_ENGINE", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    assert OpenSearchCluster.from_environment() is None

    monkeypatch.setenv("OPENSEARCH_URL", "https://search-x.eu-west-1.es.amazonaws.com")
    monkeypatch.setenv("OPENSEARCH_SERVICE", "es")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert OpenSearchCluster.from_environment() == OpenSearchCluster(
        "https://search-x.eu-west-1.es.amazonaws.com", "es", "eu-west-1", "faiss"
    )
    monkeypatch.setenv("OPENSEARCH_ENGINE", "nmslib")
    with pytest.raises(ValueError, match="faiss or lucene"):
        OpenSearchCluster.from_environment()
