"""Persistence: tables and migrations, engines, the input documents' shapes, task kinds, ingest
(fetch, validate, pair, write), read functions, the in-memory catalog of a release, export.

May import analysis; never graph, strawberry or starlette.
"""
