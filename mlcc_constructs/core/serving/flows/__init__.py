"""The network flows a deployment's pods need and must not have, checked against its policies.

:mod:`.derive` says, from a deployment's facts, which connections its pods need (DNS, the Pod
Identity agent, S3 or the Hugging Face Hub, the load balancer from its subnets, the scrapers,
the ``allow_from`` callers, the group's peers, the CacheBackend) and which they must not get;
:mod:`.check` evaluates each of them, for every pod the deployment's objects make, against the
NetworkPolicies of the deployments applied together
(:mod:`mlcc_constructs.core.platform.network_policy_eval`).
"""
