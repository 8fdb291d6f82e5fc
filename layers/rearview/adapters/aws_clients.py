"""boto3 clients for the AWS adapters: one place that applies the settings' region and the timeouts and retries.

boto3 is imported here, on first use, so that importing an adapter module costs nothing until a client is built.
"""

from __future__ import annotations

from typing import Any

from rearview.settings import AwsSettings

# A connection to an AWS endpoint in the region opens in milliseconds: two seconds means the endpoint is unreachable.
CONNECT_TIMEOUT_SECONDS = 2.0
# Long enough for a large DynamoDB batch or a k-NN search, short enough to retry inside a request's time.
READ_TIMEOUT_SECONDS = 10.0
# Attempts in all, with botocore's "standard" jittered backoff for throttling and transient errors.
MAX_ATTEMPTS = 3


def boto3_client(service: str, settings: AwsSettings | None = None) -> Any:
    """A boto3 client for `service` in the settings' region, with the timeouts and retry attempts above."""
    import boto3
    from botocore.config import Config

    aws = settings or AwsSettings()
    config = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"},
    )
    return boto3.client(service, region_name=aws.region, config=config)  # type: ignore[call-overload]
