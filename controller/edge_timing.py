"""How late the gate's edges left the controller, and in which stage of firing they lost the time.

Each fired edge's record (``controller/scheduler_app.py``) holds its times on the
controller's wall clock: ``due_s``; ``send_at_s`` (due minus the advance); ``woke_s``,
when the hub's sleep returned (planned ``hub_margin_s`` before ``send_at_s``);
``prepared_s``, its messages serialised; ``slept_s``, the plain sleep's return;
``sent_s``, handed to the switch connections; ``barrier_s``, the last barrier reply.
Plain functions of those records, so they are tested without a framework.
"""

from __future__ import annotations


def summary(values_ms: list[float]) -> dict | None:
    """Mean, p95 and max of ``values_ms`` (None when empty); p95 is the nearest rank below."""
    if not values_ms:
        return None
    values_ms = sorted(values_ms)
    return {"mean": sum(values_ms) / len(values_ms), "p95": values_ms[int(0.95 * (len(values_ms) - 1))],
            "max": values_ms[-1]}


def stages_ms(fired: list[dict], hub_margin_s: float) -> dict:
    """Per stage, over the fired edges that recorded it: the hub's oversleep against its plan,
    the time to prepare, the plain sleep's oversleep past ``send_at_s``, and the sends."""
    timed = [e for e in fired if e.get("slept_s") is not None and e.get("sent_s") is not None]

    def stage(start: str, end: str, plan_s: float = 0.0):
        return summary([(e[end] - e[start] - plan_s) * 1000 for e in timed])

    return {"hub_oversleep_ms": stage("send_at_s", "woke_s", -hub_margin_s),
            "prepare_ms": stage("woke_s", "prepared_s"),
            "precise_oversleep_ms": stage("send_at_s", "slept_s"),
            "send_ms": stage("slept_s", "sent_s")}
