"""The HTTP server: the ASGI app, the /graphql handler (response cache, persisted queries, rate
limits, GraphQL over HTTP), the documents under /api/v1 and /data, health and readiness.

May import graph.schema, graph.engine, the leaves (graph.settings, graph.errors, graph.caches),
db and analysis; only graph.cli and graph.doctor import it.
"""
