"""A policy the fluid model cannot simulate: ``none`` on the fabric, but its bursts are said to share
a link by a rule the model has not got. Tests load it (``--policy-file``) to see ``run``, ``plan`` and
``sweep`` keep what they measured or computed, and say what the model could not do."""

from controller.theory.policies import NonePolicy, register


@register
class UnmodelledPolicy(NonePolicy):
    name = "unmodelled"
    description = "none on the fabric; its bursts share a link by a rule the fluid model has not got"

    def link_sharing(self, tcp_sharing: str = "fair") -> str:
        return "by-queue-age"  # not one of policies.SHARING
