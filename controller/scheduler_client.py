"""The window scheduler's REST API seen from outside the controller: plain HTTP, no Ryu.

The endpoints and their bodies are defined by ``controller/scheduler.py``.
Everything that talks to a running scheduler goes through
:class:`SchedulerClient`: the job glue (``apps/jobrun.py``), the job driver
fetching its plan (``apps/dltjob.py``), ``bench/gate.py`` and the tests.
"""

from __future__ import annotations

import requests

TIMEOUT_S = 5.0


class SchedulerRefused(RuntimeError):
    """The scheduler answered with an HTTP error (its one-line reason in the message)."""

    def __init__(self, status: int, text: str):
        super().__init__(f"scheduler said {status}: {text[:300]}")
        self.status = status


class SchedulerUnreachable(RuntimeError):
    """The controller did not answer a request in time, or could not be reached (the request named)."""


class SchedulerClient:
    """``/shiftbed/...`` on the controller at ``rest_url`` (e.g. ``http://127.0.0.1:8080``)."""

    def __init__(self, rest_url: str, timeout_s: float = TIMEOUT_S):
        self.rest_url = rest_url.rstrip("/")
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        """One request, answer unchecked (``json=`` or ``data=`` as for ``requests``); ``path`` after the
        host, e.g. ``/shiftbed/jobs``. For callers that look at refusals themselves.
        :class:`SchedulerUnreachable` when there is no answer within ``timeout_s``."""
        try:
            return requests.request(method, f"{self.rest_url}{path}", timeout=self.timeout_s, **kwargs)
        except requests.Timeout:
            raise SchedulerUnreachable(f"the controller at {self.rest_url} did not answer {method} {path} within "
                                       f"{self.timeout_s:g} s") from None
        except requests.ConnectionError as exc:
            raise SchedulerUnreachable(f"the controller at {self.rest_url} could not be reached for {method} {path} "
                                       f"({exc.__class__.__name__})") from None

    def _checked(self, method: str, path: str, **kwargs) -> dict:
        answer = self.request(method, path, **kwargs)
        if answer.status_code >= 400:
            raise SchedulerRefused(answer.status_code, answer.text)
        return answer.json()

    # -- jobs ------------------------------------------------------------------------------
    def add_job(self, body: dict) -> dict:
        """``POST /shiftbed/jobs``: register a job; returns ``{"job", "schedule"}``."""
        return self._checked("POST", "/shiftbed/jobs", json=body)

    def remove_job(self, name: str) -> bool:
        """``DELETE /shiftbed/jobs/<name>``; False if it was not registered."""
        return self.request("DELETE", f"/shiftbed/jobs/{name}").ok

    def replace_job(self, body: dict) -> dict:
        """Remove a job of the same name if there is one, then register ``body``."""
        self.remove_job(body["name"])
        return self.add_job(body)

    # -- policy and gate -------------------------------------------------------------------
    def set_policy(self, policy: str, **options) -> dict:
        """``POST /shiftbed/policy`` (options: start_in_s | epoch_s, seed, mode, floor_kbps, floor_burst_ms,
        guard_ms, quantum_ms, toggle, advance_ms); returns the schedule."""
        return self._checked("POST", "/shiftbed/policy", json={"policy": policy, **options})

    def stop(self) -> dict:
        """``POST /shiftbed/stop``: stop gating and remove every gate rule; returns the status."""
        return self._checked("POST", "/shiftbed/stop")

    # -- reading ---------------------------------------------------------------------------
    def get(self, what: str) -> dict:
        """``GET /shiftbed/<what>``: schedule, status, edges, jobs."""
        return self._checked("GET", f"/shiftbed/{what}")

    def schedule(self) -> dict:
        """``GET /shiftbed/schedule``: policy, epoch and each job's shift, offset and window."""
        return self.get("schedule")

    def status(self) -> dict:
        """``GET /shiftbed/status``: gating, edges fired, lateness, OpenFlow errors."""
        return self.get("status")
