"""The GraphQL engine: each request parsed and validated within limits, charged, and executed
by its query's plan, errors coded and masked. Knows GraphQL (graphql-core, strawberry), not
LeadGreen's data.

May import graph.internals, graph.settings, graph.errors and graph.caches; not db, analysis,
graph.schema or graph.server. Every use of a library's internals is in graph/internals.py.
"""
