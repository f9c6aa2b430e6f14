"""The supply-chain check's verdict (security/allowlist.py) and its allow-list."""
