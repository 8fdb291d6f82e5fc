"""Gradual deployment: every function's `live` alias is moved to a new version by CodeDeploy, a little traffic
first (by default 10 % for 15 minutes, `rearview:deploymentConfig`), and rolled back to the previous version at once
if the function's own alarms (error rate, throttles) fire meanwhile, if the deployment fails, or if it is stopped.

The canary lasts as long as those alarms take to fire: they need 2 (error rate) or 3 (throttles) bad five-minute
periods, so a 5-minute canary would be over before either could, and would roll back nothing. The alarms watch the
alias, old and new versions together: with 10 % of the traffic on the new version, an error rate over 5 % on the
alias means the new version fails over about half its invocations (a version that fails outright is caught; one
that fails a little is not, and is the alarms' to report after the deployment).

CloudFormation waits for each deployment: `cdk deploy` returns once every alias points at the new versions, or fails
(and rolls the stack back) when one was rolled back. The functions are independent, so their deployments run side
by side. Lambda deployments cost nothing in CodeDeploy."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from rearview_infra.functions import construct_name

DEFAULT_DEPLOYMENT_CONFIG = "CodeDeployDefault.LambdaCanary10Percent15Minutes"
# CodeDeploy's predefined Lambda configurations (canary, linear, all at once).
DEPLOYMENT_CONFIGS = (
    "CodeDeployDefault.LambdaCanary10Percent5Minutes",
    "CodeDeployDefault.LambdaCanary10Percent10Minutes",
    "CodeDeployDefault.LambdaCanary10Percent15Minutes",
    "CodeDeployDefault.LambdaCanary10Percent30Minutes",
    "CodeDeployDefault.LambdaLinear10PercentEvery1Minute",
    "CodeDeployDefault.LambdaLinear10PercentEvery2Minutes",
    "CodeDeployDefault.LambdaLinear10PercentEvery3Minutes",
    "CodeDeployDefault.LambdaLinear10PercentEvery10Minutes",
    "CodeDeployDefault.LambdaAllAtOnce",
)


def observation_minutes(config_name: str) -> int:
    """How long a configuration runs the new version on part of the traffic before it takes all of it (0: at once)."""
    canary = re.fullmatch(r"CodeDeployDefault\.LambdaCanary10Percent(\d+)Minutes", config_name)
    if canary:
        return int(canary.group(1))
    linear = re.fullmatch(r"CodeDeployDefault\.LambdaLinear10PercentEvery(\d+)Minutes?", config_name)
    if linear:
        return 9 * int(linear.group(1))  # nine steps of 10 % before the last
    return 0


class GradualDeployment(Construct):
    """One CodeDeploy application, and a deployment group per alias with its rollback alarms."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        aliases: Mapping[str, lambda_.Alias],
        alarms: Mapping[str, Sequence[cloudwatch.IAlarm]],
        config_name: str = DEFAULT_DEPLOYMENT_CONFIG,
    ) -> None:
        super().__init__(scope, construct_id)
        if config_name not in DEPLOYMENT_CONFIGS:
            raise ValueError(f"rearview:deploymentConfig must be one of {', '.join(DEPLOYMENT_CONFIGS)}")
        self.application = codedeploy.LambdaApplication(self, "Application")
        config = codedeploy.LambdaDeploymentConfig.from_lambda_deployment_config_name(self, "Config", config_name)
        self.groups: dict[str, codedeploy.LambdaDeploymentGroup] = {}
        for name, alias in aliases.items():
            self.groups[name] = codedeploy.LambdaDeploymentGroup(
                self,
                f"{construct_name(name)}Deployment",
                application=self.application,
                alias=alias,
                deployment_config=config,
                alarms=list(alarms.get(name, ())),
                auto_rollback=codedeploy.AutoRollbackConfig(
                    failed_deployment=True, stopped_deployment=True, deployment_in_alarm=True
                ),
            )
