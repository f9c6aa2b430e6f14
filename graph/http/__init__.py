"""The HTTP side of /graphql: a lean ASGI handler speaking GraphQL over HTTP, with response
caching, persisted queries, rate limiting, request limits and JSON errors."""
