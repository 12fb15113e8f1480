"""``ray_address = ""``: the app starts a local Ray cluster on demand and stops it with itself,
leaving no process behind."""

from __future__ import annotations

import psutil
import pytest

from manual_slop.mma.backends.ray_backend import RayCluster, RaySettings, load_ray
from tests.helpers import no_new_children

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'manual-slop[ray]'")


@pytest.mark.heavy(10)
def test_a_local_cluster_started_on_demand_goes_with_the_app() -> None:
    with no_new_children(grace_s=15.0):  # every raylet, GCS and worker process ends with stop()
        cluster = RayCluster(RaySettings(address=""))
        try:
            cluster.start()
            names = " ".join(p.name() for p in psutil.Process().children(recursive=True))
            assert "raylet" in names and "gcs_server" in names  # ours: started by this process
            assert ray.get(ray.remote(lambda: 6 * 7).remote(), timeout=60) == 42
        finally:
            cluster.stop()
        assert not load_ray().is_initialized()
