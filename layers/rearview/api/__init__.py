"""The edges that speak HTTP: `http` holds the one route table (a Powertools APIGatewayHttpResolver)
that Lambda and `local_server` both serve, so a request behaves the same on a laptop and on AWS."""
