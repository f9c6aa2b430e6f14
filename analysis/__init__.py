"""Pure computations over measured configurations (Pareto frontiers, the leaderboard's best
configuration, comparisons, curves and fits, units, aggregates, changes between releases):
plain functions over plain values. May import nothing of LeadGreen's, nor any database or API
library.
"""
