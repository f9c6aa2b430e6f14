"""The output types, one module per family, each converting rows at the boundary (`of`,
`from_row`); families that construct each other (a model and its configurations) share one.

May import graph.schema.inputs, context and memory, db and analysis; not answers or query.
"""
