"""Matplotlib figures and tables for export (Agg, no Qt)."""
