"""Where a Tier 3 attempt runs: in a thread of the app (the default), or as a Ray task
(:mod:`~manual_slop.mma.backends.ray_backend`, ``[mma] backend = "ray"``)."""
