"""Pure computations over measured configurations: no SQL, no GraphQL."""
