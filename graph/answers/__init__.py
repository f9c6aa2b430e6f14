"""Root fields that answer questions (rankings, frontiers, fits, statistics), not only rows."""
