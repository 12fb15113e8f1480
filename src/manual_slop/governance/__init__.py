"""Governance: the rules, tables and records around the Execution Clutch (see DESIGN.md)."""
