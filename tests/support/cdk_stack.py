"""The CDK stack synthesised for tests/infra: placeholder handlers and an empty layer (the template does not depend on
their content), and helpers to read the template as CloudFormation JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from rearview_infra.functions import FUNCTION_NAMES
from rearview_infra.search import ServerlessVectorCollection
from rearview_infra.stack import RearviewProps, RearviewStack

EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
SUMMARY_MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


def placeholder_tree(root: Path) -> RearviewProps:
    """Props pointing at an empty layer and a stub handler per function."""
    (root / "layer" / "python").mkdir(parents=True)
    for name in FUNCTION_NAMES:
        (root / "functions" / name).mkdir(parents=True)
        (root / "functions" / name / "handler.py").write_text("def handler(event, context):\n    return None\n")
    return RearviewProps(
        functions_dir=root / "functions",
        layer_dir=root / "layer",
        embedding_model=EMBEDDING_MODEL,
        summary_model=SUMMARY_MODEL,
    )


@dataclass
class Synthesised:
    stack: RearviewStack
    template: Template
    resources: dict[str, dict[str, Any]]

    def id_of(self, construct: Any) -> str:
        """The logical id of an L2 construct's CloudFormation resource."""
        return self.stack.get_logical_id(construct.node.default_child)

    def resolve(self, value: Any) -> Any:
        """A token (an ARN, a name) as the template writes it."""
        return self.stack.resolve(value)

    def alias_arn(self, name: str) -> Any:
        """The `live` alias's ARN of a function, as the template writes it (what every trigger invokes)."""
        return self.resolve(self.stack.functions.aliases[name].function_arn)

    def alias_name(self, name: str) -> Any:
        """`<function name>:live`, as an event source mapping names the alias it invokes."""
        return self.resolve(self.stack.functions.aliases[name].function_name)

    def function(self, name: str) -> dict[str, Any]:
        return self.resources[self.id_of(self.stack.functions.functions[name])]["Properties"]

    def env(self, name: str) -> dict[str, Any]:
        return self.function(name)["Environment"]["Variables"]

    def role_id(self, name: str) -> str:
        return self.id_of(self.stack.functions.functions[name].role)

    def statements(self, name: str) -> list[dict[str, Any]]:
        """Every IAM statement attached to the function's role."""
        role = {"Ref": self.role_id(name)}
        found: list[dict[str, Any]] = []
        for resource in self.resources.values():
            if resource["Type"] == "AWS::IAM::Policy" and role in resource["Properties"]["Roles"]:
                found.extend(resource["Properties"]["PolicyDocument"]["Statement"])
        return found

    def actions(self, name: str) -> set[str]:
        return {action for st in self.statements(name) for action in as_list(st["Action"])}

    def holders(self, action: str, resource: Any) -> set[str]:
        """The functions whose role allows `action` on `resource` (matched as CloudFormation JSON)."""
        return {
            name
            for name in FUNCTION_NAMES
            for st in self.statements(name)
            if action in as_list(st["Action"]) and resource in as_list(st["Resource"])
        }

    def arn_of(self, construct: Any) -> dict[str, Any]:
        return {"Fn::GetAtt": [self.id_of(construct), "Arn"]}

    def collection(self) -> ServerlessVectorCollection:
        assert isinstance(self.stack.search, ServerlessVectorCollection)
        return self.stack.search


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def synthesise(props: RearviewProps) -> Synthesised:
    app = cdk.App()
    stack = RearviewStack(app, "RearviewTest", props=props)
    template = Template.from_stack(stack)
    return Synthesised(stack, template, template.to_json()["Resources"])


def render(value: Any) -> str:
    """A CloudFormation string value as text: pseudo parameters and references become `@Name`."""
    if isinstance(value, str):
        if cdk.Token.is_unresolved(value):
            return render(cdk.Stack().resolve(value))
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        return render_join(value)
    if isinstance(value, dict) and "Ref" in value:
        return f"@{value['Ref']}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return f"@{value['Fn::GetAtt'][0]}"
    raise AssertionError(f"unexpected CloudFormation value {value!r}")


def render_join(value: dict[str, Any]) -> str:
    separator, parts = value["Fn::Join"]
    return separator.join(render(part) for part in parts)
