"""Who must approve is policy: decide each tool call with code, Cedar, Rego or OPA.

``HumanInputToolHandler(policy=...)`` (every host tool) or ``Approval(policy=...)`` (one
tool) takes a :class:`Policy`: ``decide(call)`` returns :class:`Allow`, :class:`Deny`,
:class:`Ask` or :class:`Abstain`. The back ends :class:`CedarPolicy`, :class:`RegoPolicy`
and :class:`OPAPolicy` read the call as their engines do; ``shadow=True`` records and counts
the decisions and keeps today's behaviour. Each decision is a ``policy_decided`` entry in
the request's history, so a call that ran without anyone has a chain that says why.
Standing grants (:mod:`roomkit.policy.grants`) let a person approve the same call again
ahead of time.
"""

from roomkit.policy._base import PolicyError
from roomkit.policy.cedar import CedarPolicy
from roomkit.policy.decisions import (
    Abstain,
    Allow,
    Ask,
    Deny,
    Policy,
    PolicyCall,
    PolicyDecision,
)
from roomkit.policy.opa import OPAPolicy
from roomkit.policy.rego import RegoPolicy
from roomkit.policy.ruling import Ruling, rule_call

__all__ = [
    "Abstain",
    "Allow",
    "Ask",
    "CedarPolicy",
    "Deny",
    "OPAPolicy",
    "Policy",
    "PolicyCall",
    "PolicyDecision",
    "PolicyError",
    "RegoPolicy",
    "Ruling",
    "rule_call",
]
