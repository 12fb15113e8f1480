"""Governance: the rules, tables and records around the Execution Clutch that keep agent runs
observable and under control (see DESIGN.md and docs/guide_governance.md)."""
