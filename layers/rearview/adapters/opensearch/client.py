"""Reaching the cluster: where it is, how requests are signed, and the opensearch-py client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from rearview.errors import ConfigurationError

if TYPE_CHECKING:
    from opensearchpy import OpenSearch


@dataclass(frozen=True)
class OpenSearchConnection:
    """Where the index's cluster is and how to reach it. `service` signs requests with SigV4 for OpenSearch
    Serverless (`aoss`) or a managed domain (`es`); None sends them unsigned (a local cluster, the test double)."""

    endpoint: str
    service: Literal["aoss", "es"] | None = "aoss"
    region: str | None = None
    timeout_seconds: float = 10.0
    max_retries: int = 2

    def client(self) -> OpenSearch:
        """A new opensearch-py client for this connection."""
        return build_opensearch_client(
            self.endpoint,
            service=self.service,
            region=self.region,
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
        )


def build_opensearch_client(
    endpoint: str,
    *,
    service: Literal["aoss", "es"] | None,
    region: str | None = None,
    timeout_seconds: float = 10.0,
    max_retries: int = 2,
) -> OpenSearch:
    """An opensearch-py client for `endpoint` (https://host[:port][/path] or http://... for a local cluster).

    A path in the endpoint prefixes every request: a domain behind a proxy that routes by path (LocalStack's
    `path` endpoint strategy: http://localhost:4566/opensearch/<region>/<domain>) is reached there, not at /.

    service `aoss`/`es`: requests signed with SigV4 (`RequestsAWSV4SignerAuth`, the non-deprecated name of
    `AWSV4SignerAuth`) with the default boto3 credentials; None: unsigned (a local cluster or the test double;
    user:password in the URL is sent as basic auth).
    """
    from opensearchpy import OpenSearch, RequestsHttpConnection

    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    if not parsed.hostname:
        raise ConfigurationError(f"opensearch endpoint: no host in {endpoint!r}", field="opensearch_endpoint")
    use_ssl = parsed.scheme == "https"
    port = parsed.port or (443 if use_ssl else 80)
    auth: Any = None
    if service is not None:
        import boto3
        from opensearchpy import RequestsAWSV4SignerAuth

        session = boto3.Session(region_name=region) if region else boto3.Session()
        credentials = session.get_credentials()
        signing_region = region or session.region_name
        if credentials is None or not signing_region:
            raise ConfigurationError("opensearch: no AWS credentials or region to sign requests with")
        auth = RequestsAWSV4SignerAuth(credentials, signing_region, service)
    elif parsed.username:
        auth = (parsed.username, parsed.password or "")
    host: dict[str, Any] = {"host": parsed.hostname, "port": port}
    if parsed.path.strip("/"):
        host["url_prefix"] = parsed.path.rstrip("/")
    return OpenSearch(
        hosts=[host],
        http_auth=auth,
        use_ssl=use_ssl,
        verify_certs=use_ssl,
        connection_class=RequestsHttpConnection,
        timeout=timeout_seconds,
        max_retries=max_retries,
        retry_on_timeout=True,
        pool_maxsize=16,
    )
