"""The GraphQL engine: parsing and validating within limits, costs, error codes and the fast
execution of plain fields. Knows GraphQL (graphql-core, strawberry), not LeadGreen's data.

May import graph.settings, graph.errors and graph.caches; not db, analysis, graph.schema or
graph.server. Every use of strawberry's or graphql-core's internals is in `internals.py`.
"""
