"""The HTTP server, one module per concept: `app` (the Starlette app and its own routes),
`edge` (what every request passes: request id, CORS, limits, security headers, its log line,
metrics and span, and the request head off the wire), `protocol` (GraphQL over HTTP: requests,
media types, statuses, refusals), `handler` (/graphql: a cached answer, or one executed by
`execute`), `response_cache` (answers and persisted queries kept), `responses` (sending answers,
compressed), `ratelimit`, `release` (the release answers come from), `observability` (logs,
metrics, tracing), `graphiql` and `documents` (/api/v1 and /data).

May import graph.schema, graph.engine, the leaves (graph.settings, graph.errors, graph.caches,
graph.internals), db and analysis; only graph.cli and graph.doctor import it.
"""
