"""Alembic migrations of the LeadGreen tables."""
