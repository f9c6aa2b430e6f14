"""The benchmark: LeadGreen under wrk on the real data, next to precomputed-bytes baselines."""
