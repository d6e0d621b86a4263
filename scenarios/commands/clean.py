"""``shiftbed clean``: remove what crashed shiftbed runs left behind, from their run records only.

A run record (``/run/shiftbed/<run_id>.json``, see ``topo/runrecord.py``)
lists the run's bridges (tagged ``external_ids:shiftbed-run``), switch
interfaces and processes (PID + start time). Records whose owner is still
alive belong to a running fabric and are left alone. Idempotent: a second run
finds nothing to do. Nothing is found by name matching or killed by name.
"""

import json
import os
import sys

from scenarios.errors import EnvironmentProblem
from scenarios.results import finish_abandoned
from topo import runrecord


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args) -> int:
    if os.geteuid() != 0:
        raise EnvironmentProblem("root: needed to remove bridges and processes; run `sudo shiftbed clean`")
    cleaned, running = [], []
    for record in runrecord.all_records():
        if record.owner_alive():
            running.append(record.run_id)
            continue
        try:
            item = runrecord.clean_run(record)
        except RuntimeError as exc:  # ovs-vsctl could not answer
            raise EnvironmentProblem(f"Open vSwitch: {exc}; start it with "
                                     "`sudo /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random`") from None
        partial = record.notes.get("results_partial_dir")  # a `shiftbed run` killed before it renamed it
        final = finish_abandoned(partial, "the run was killed (cleaned up by `shiftbed clean`)") if partial else None
        item["results"] = str(final) if final else None
        cleaned.append(item)
    if args.json:
        print(json.dumps({"cleaned": cleaned, "running": running, "ok": True}))
    else:
        for item in cleaned:
            print(f"run {item['run_id']}: stopped {len(item['processes'])} process(es), removed bridges "
                  f"{item['bridges'] or 'none'}, interfaces {item['interfaces'] or 'none'}"
                  + (f"; its partial results are in {item['results']}" if item["results"] else ""), file=sys.stderr)
        for run_id in running:
            print(f"run {run_id}: still running, left alone", file=sys.stderr)
        if not cleaned and not running:
            print("nothing to clean", file=sys.stderr)
    return 0
