"""Reusable test support: loopback HTTP stub servers and process helpers (no network beyond 127.0.0.1)."""
