"""A tiny ledger: money, pattern pairs, schedules."""
