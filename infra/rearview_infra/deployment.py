"""Gradual deployment: every function's `live` alias is moved to a new version by CodeDeploy, a little traffic
first (by default 10 % for 5 minutes, `rearview:deploymentConfig`), and rolled back to the previous version at once
if the function's own alarms (error rate, throttles) fire meanwhile, if the deployment fails, or if it is stopped.

CloudFormation waits for each deployment: `cdk deploy` returns once every alias points at the new versions, or fails
(and rolls the stack back) when one was rolled back. The functions are independent, so their deployments run side
by side. Lambda deployments cost nothing in CodeDeploy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_codedeploy as codedeploy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from rearview_infra.functions import construct_name

DEFAULT_DEPLOYMENT_CONFIG = "CodeDeployDefault.LambdaCanary10Percent5Minutes"
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
