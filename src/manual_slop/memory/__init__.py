"""Memory: stored conversations, compaction, recall, notes, the profile and the project index.

- :mod:`~manual_slop.memory.store` — every event of every conversation, in SQLite (WAL).
- :mod:`~manual_slop.memory.compaction` — older rounds replaced by a summary event.
- :mod:`~manual_slop.memory.recall` — cross-conversation search over stored events.
- :mod:`~manual_slop.memory.notes` / :mod:`~manual_slop.memory.profile` — durable notes and
  the passive profile.
- :mod:`~manual_slop.memory.index` — the project index on chromadb with an offline embedder.
"""
