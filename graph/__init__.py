"""The LeadGreen GraphQL API: strawberry types, the Starlette app and the CLI."""
