"""GraphQL types, one module per family."""
