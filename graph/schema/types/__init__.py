"""The output types, one module per family, each converting rows at the boundary (`of`,
`from_row`). A type that links to one defined above it asks `late` for its constructor.

May import graph.schema.inputs, graph.schema.memory, db and analysis; not answers or roots.
"""
