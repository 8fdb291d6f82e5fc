"""docker-compose.yml and Dockerfile.local's `emulate` target, checked without Docker: the compose file is valid YAML
of the expected shape, and it runs the same emulator as `make emulate` (the variables it sets are the ones the
`rearview emulate` command reads, the image's template is synthesised with the Makefile's context, and its
entrypoint names the template the image holds)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from rearview.cli import app

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    return dict(yaml.safe_load((ROOT / "docker-compose.yml").read_text()))


def _emulate_envvars() -> set[str]:
    group: Any = typer.main.get_command(app)
    command = group.commands["emulate"]
    names: set[str] = set()
    for param in command.params:
        envvar = getattr(param, "envvar", None)
        names.update([envvar] if isinstance(envvar, str) else list(envvar or []))
    return names


def test_compose_runs_moto_opensearch_and_the_emulator_on_8765() -> None:
    services = _compose()["services"]
    assert set(services) == {"moto", "opensearch", "rearview"}
    assert "motoserver/moto" in services["moto"]["image"]
    assert "opensearchproject/opensearch" in services["opensearch"]["image"]
    assert services["opensearch"]["environment"]["DISABLE_SECURITY_PLUGIN"] == "true"
    rearview = services["rearview"]
    assert rearview["build"] == {"context": ".", "dockerfile": "Dockerfile.local", "target": "emulate"}
    assert rearview["ports"] == ["127.0.0.1:8765:8765"]
    assert set(rearview["depends_on"]) == {"moto", "opensearch"}


def test_compose_sets_only_what_the_emulate_command_reads() -> None:
    environment = _compose()["services"]["rearview"]["environment"]
    known = _emulate_envvars() | {"OPENSEARCH_URL", "OPENSEARCH_ENGINE", "REARVIEW_API_TOKEN"}
    assert set(environment) <= known, set(environment) - known
    assert environment["REARVIEW_EMULATE_MOTO_URL"] == "http://moto:5000"
    assert environment["OPENSEARCH_URL"] == "http://opensearch:9200"
    # The image sets where the API listens and the data directory: names the command reads too.
    dockerfile = (ROOT / "Dockerfile.local").read_text()
    emulate_stage = dockerfile.split("AS emulate", 1)[1].split("\nFROM ", 1)[0]
    set_in_image = set(re.findall(r"(REARVIEW_[A-Z_]+)=", emulate_stage))
    assert set_in_image and set_in_image <= _emulate_envvars(), set_in_image - _emulate_envvars()


def test_the_image_synthesises_the_template_as_make_emulate_does() -> None:
    dockerfile = (ROOT / "Dockerfile.local").read_text()
    makefile = (ROOT / "Makefile").read_text()
    (context,) = re.findall(r"^EMULATE_CONTEXT := (.+)$", makefile, flags=re.MULTILINE)
    template_stage = dockerfile.split("AS template", 1)[1].split("\nFROM ", 1)[0]
    assert " ".join(context.split()) in " ".join(template_stage.replace("\\\n", " ").split())
    assert "COPY --from=template /template /app/build/emulate" in dockerfile
    assert '"--template", "/app/build/emulate/Rearview.template.json"' in dockerfile
    # `local` stays the default target (the last stage), as before the emulator came.
    assert dockerfile.rstrip().rsplit("\nFROM ", 1)[1].startswith("base AS local")


def _stages() -> dict[str, list[str]]:
    """Dockerfile.local's stages by name, each as its instructions (continuation lines joined)."""
    text = (ROOT / "Dockerfile.local").read_text().replace("\\\n", " ")
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = re.match(r"^FROM \S+ AS (\w+)", line)
        if found:
            current = stages.setdefault(found.group(1), [])
        current.append(line.strip())
    return stages


def _extras_installed(instructions: list[str]) -> set[str]:
    return {
        e
        for line in instructions
        for group in re.findall(r'pip install "\.\[([\w,-]+)\]"', line)
        for e in group.split(",")
    }


def _position(instructions: list[str], pattern: str) -> int:
    return next(i for i, line in enumerate(instructions) if re.search(pattern, line))


def test_every_image_installs_its_dependencies_before_copying_the_code() -> None:
    stages = _stages()
    assert not any(line.startswith("COPY layers ") for line in stages["base"]), "the base stage copies no code"
    for name in ("template", "emulate", "local"):
        instructions = stages[name]
        dependencies = _position(instructions, r'pip install "\.\[')
        code = _position(instructions, r"^COPY layers ")
        package = _position(instructions, r"pip install --no-deps")
        assert dependencies < code < package, name


def test_the_local_image_holds_the_extras_a_user_runs_and_each_extra_exists() -> None:
    import tomllib

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    stages = _stages()
    assert {"onnx", "local", "mcp", "llm", "embedded"} <= _extras_installed(stages["local"])
    for name in ("template", "emulate", "local"):
        assert _extras_installed(stages[name]) <= declared, name


def test_every_compose_service_has_resource_limits() -> None:
    for name, service in _compose()["services"].items():
        limits = service["deploy"]["resources"]["limits"]
        assert float(limits["cpus"]) > 0, name
        assert re.fullmatch(r"\d+[MG]", str(limits["memory"])), name
    # OpenSearch's heap fits within its container's limit.
    opensearch = _compose()["services"]["opensearch"]
    heap = re.search(r"-Xmx(\d+)m", opensearch["environment"]["OPENSEARCH_JAVA_OPTS"])
    assert heap and int(heap.group(1)) < int(opensearch["deploy"]["resources"]["limits"]["memory"].rstrip("M"))
