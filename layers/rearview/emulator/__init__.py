"""`rearview emulate`: the AWS deployment's shape on this machine, with no account and no Docker.

The synthesised CloudFormation template (`make emulate` writes it to `build/emulate/`) is the one source of what
runs: its table, queues and schedule are created on moto's server (DynamoDB with its stream, SQS, EventBridge), its
functions' real handlers run in Lambda containers with the environment the template gives them, and the emulator
drives them as AWS would: an HTTP API that runs the authorizer first and sends API Gateway v2 events, SQS and stream
event sources with partial batch failures, the schedule's ticks, and DynamoDB's TTL, which moto does not enforce.
Search is a real OpenSearch node when one answers at OPENSEARCH_URL, else the embedded index.

One module per job:

- `template`: reading the template (resources, routes, event sources, intrinsic functions).
- `resources`: creating its queues, table and rules on moto (`deploy`) and naming them (`Deployment`).
- `containers`: `FunctionContainer`, a function's process: its environment, cold start, invocations, timeout.
- `http_front`: `ApiGateway`, the HTTP API: routes, the authorizer and its cache, payload 2.0 events.
- `sqs_poller`, `stream_poller`, `event_filter`: the event source mappings.
- `timers`: the schedule's ticks and the TTL sweeper.
- `search`: OpenSearch or the embedded index.
- `snapshot`: the state kept in the data directory between runs.
- `emulator`: `Emulator`, which starts and stops them in order.

The emulator is an edge, beside `rearview.api`: it reaches the library only through `rearview.bootstrap` (to create
the index) and runs the handlers from the template's assets, never importing them.
"""
