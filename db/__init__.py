"""Persistence for LeadGreen: tables, engine, reads and ingest. Knows nothing of GraphQL."""
