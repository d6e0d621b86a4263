"""Read the fabric app's port-counter CSV into pandas, with per-interval rates.

The CSV (one row per switch port per poll, written by ``controller/fabric_app.py``)
has the columns :data:`controller.fabric_app.STATS_COLUMNS`: ``time_s`` (Unix
time the reply arrived), ``dpid``, ``switch`` (``leaf1``...), ``port`` and the
OpenFlow counters ``rx/tx_bytes``, ``rx/tx_packets``, ``rx/tx_dropped``,
``rx/tx_errors``. Port ``p`` of a leaf faces host slot ``p`` or, above
``hosts_per_leaf``, spine ``p - hosts_per_leaf``; port ``L`` of a spine faces
``leafL`` (``topo/wiring.py``).
"""

import pandas as pd


def read_port_stats(path) -> pd.DataFrame:
    """The CSV plus ``interval_s``, ``rx_mbps`` and ``tx_mbps`` since the previous sample of the same port.

    The first sample of each port has no rate (NaN). A row may be cut short if
    the controller was killed while writing; it is dropped.
    """
    frame = pd.read_csv(path, on_bad_lines="skip").dropna(subset=["tx_errors"])
    frame = frame.sort_values(["dpid", "port", "time_s"], kind="stable").reset_index(drop=True)
    by_port = frame.groupby(["dpid", "port"], sort=False)
    frame["interval_s"] = by_port["time_s"].diff()
    for direction in ("rx", "tx"):
        frame[f"{direction}_mbps"] = by_port[f"{direction}_bytes"].diff() * 8 / 1e6 / frame["interval_s"]
    return frame
