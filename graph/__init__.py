"""The API over the data: the command (`cli`), the HTTP server (`server`), the GraphQL schema
(`schema`) and the engine that runs it (`engine`), with three leaves every layer may use
(`settings`, `errors`, `caches`).

Imports run one way: cli → server → schema → engine → leaves → db → analysis (ARCHITECTURE.md;
pyproject.toml's import contracts, which tests/test_layers.py checks).
"""
