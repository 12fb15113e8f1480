"""/plan: the DPPM pipeline (planner → validated plan → groups of subtasks run by agents on engines →
merge → judge), built on the MMA machinery."""
