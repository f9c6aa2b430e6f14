"""What the root fields answer: each function reads the release's catalog, checks its arguments
(BadInput names what is wrong; a GPU, task or model name through graph.schema.context's
known_gpu, known_task and known_model) and builds the answer's types.

May import graph.schema.types, inputs, context, cursor, db and analysis; not graph.schema.query.
"""
