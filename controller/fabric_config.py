"""What the fabric controller is told: fabric parameters, pins, port-stats output.

Written as JSON by the bring-up (``topo/fabric.py``) or by hand, read by
``controller/fabric_app.py``. The path reaches the Ryu process in the
environment variable :data:`CONFIG_ENV` (``python -m controller --config FILE``
sets it). Without it the app uses the defaults below (the ``leafspine``
topology's defaults, no pins, no CSV). Example::

    {"fabric": {"spines": 2, "leaves": 4, "hosts_per_leaf": 2,
                "host_link_mbps": 50, "fabric_link_mbps": 50},
     "pins": [{"spine": 2, "dst_port_range": [5201, 5208]}],
     "stats_csv": "/var/tmp/run1/port_stats.csv", "stats_hz": 10}
"""

import json
import math
import os
from dataclasses import dataclass, field

from controller.forwarding import Pin
from topo.wiring import FabricParams

CONFIG_ENV = "SHIFTBED_FABRIC_CONFIG"
DEFAULT_STATS_HZ = 10.0
MAX_STATS_HZ = 100.0


@dataclass(frozen=True)
class FabricConfig:
    params: FabricParams = field(default_factory=FabricParams)
    pins: tuple[Pin, ...] = ()
    stats_csv: str | None = None
    stats_hz: float = DEFAULT_STATS_HZ

    def __post_init__(self):
        hz = self.stats_hz
        if isinstance(hz, bool) or not isinstance(hz, int | float) or not math.isfinite(hz) or not 0 < hz <= MAX_STATS_HZ:
            raise ValueError(f"stats_hz: must be in (0, {MAX_STATS_HZ}], got {hz!r}")

    @classmethod
    def from_dict(cls, data: dict) -> "FabricConfig":
        if not isinstance(data, dict):
            raise ValueError("fabric config: must be a JSON object")
        unknown = sorted(set(data) - {"fabric", "pins", "stats_csv", "stats_hz"})
        if unknown:
            raise ValueError(f"fabric config: unknown key(s) {', '.join(unknown)}")
        return cls(
            params=FabricParams.from_dict(data.get("fabric", {})),
            pins=tuple(Pin.from_dict(pin) for pin in data.get("pins", [])),
            stats_csv=data.get("stats_csv"),
            stats_hz=data.get("stats_hz", DEFAULT_STATS_HZ),
        )

    def as_dict(self) -> dict:
        return {"fabric": self.params.as_dict(), "pins": [pin.as_dict() for pin in self.pins],
                "stats_csv": self.stats_csv, "stats_hz": self.stats_hz}

    def write(self, path: str) -> None:
        with open(path, "w") as out:
            json.dump(self.as_dict(), out, indent=2)


def load_config(path: str | None = None) -> FabricConfig:
    """The config at ``path``, else at ``$SHIFTBED_FABRIC_CONFIG``, else the defaults."""
    path = path or os.environ.get(CONFIG_ENV)
    if not path:
        return FabricConfig()
    with open(path) as source:
        return FabricConfig.from_dict(json.load(source))
