"""boto3 clients for the AWS adapters: one place that applies the settings' region, timeouts and retries.

boto3 is imported here, on first use, so that importing an adapter module costs nothing until a client is built.
"""

from __future__ import annotations

from typing import Any

from rearview.settings import AwsSettings


def boto3_client(service: str, settings: AwsSettings | None = None) -> Any:
    """A boto3 client for `service` with the settings' region, connect/read timeouts and retry attempts."""
    import boto3
    from botocore.config import Config

    aws = settings or AwsSettings()
    config = Config(
        connect_timeout=aws.connect_timeout_seconds,
        read_timeout=aws.read_timeout_seconds,
        # "standard" retries throttling and transient errors with jittered backoff, up to max_attempts in all.
        retries={"max_attempts": aws.max_attempts, "mode": "standard"},
    )
    return boto3.client(service, region_name=aws.region, config=config)  # type: ignore[call-overload]
