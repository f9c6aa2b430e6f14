"""The root fields, one module per area; `graph.schema.query` puts them in one Query type.

A root field reads its arguments and calls one function of graph.schema.answers. May import
graph.schema.answers, types and inputs; nothing imports it but graph.schema.query.
"""
