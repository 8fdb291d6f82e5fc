"""The edges that speak HTTP: `routes` holds the route table, made from the operation catalogue (standard library
only, so the CDK app reads it too), and `http` the Powertools resolver that Lambda and `local_server` both serve
from it, so a request behaves the same on a laptop and on AWS."""
