"""The HTTP side of /graphql: a lean ASGI handler with response caching and persisted queries."""
