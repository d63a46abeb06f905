"""Where a pod gets its EKS Pod Identity credentials, for the NetworkPolicy rule that lets it.

The EKS Pod Identity agent listens for pods' credential requests on the link-local
``169.254.170.23`` (IPv4) and ``[fd00:ec2::23]`` (IPv6) (EKS User Guide, "Set up the Amazon EKS
Pod Identity Agent", Considerations; Auto Mode runs the agent itself), on port 80: the credential
URIs are ``http://169.254.170.23/v1/credentials`` and ``http://[fd00:ec2::23]/v1/credentials``
(aws/secrets-store-csi-driver-provider-aws ``credential_provider/
pod_identity_credential_provider.go`` 047a7a8b), and the agent's DaemonSet runs it with
``--port 80`` on the host network (aws/eks-pod-identity-agent
``charts/eks-pod-identity-agent/templates/daemonset.yaml`` 2f35e382).

The agent answers from the node's host network but at these link-local addresses, not at the
node's own IP, so a pod's egress policy governs the connection (the VPC CNI's policy agent
exempts only the node IP, aws/aws-network-policy-agent PR 65): a pod isolated for egress
reaches the agent only through a rule naming these addresses on TCP 80. Whether the VPC CNI
enforces an ``ipBlock`` on a link-local address as written is not verified here (a deny of an
explicitly allowed ``169.254.169.254/32`` was reported in aws/aws-network-policy-agent
issue 120, answered with an ``except`` fix in agent v1.0.4).
"""

from __future__ import annotations

AGENT_ADDRESSES = ("169.254.170.23", "fd00:ec2::23")
"""The Pod Identity agent's IPv4 and IPv6 addresses (module doc)."""
AGENT_CIDRS = ("169.254.170.23/32", "fd00:ec2::23/128")
"""The same addresses as the ``ipBlock`` CIDRs a NetworkPolicy names."""
AGENT_PORT = 80
"""The agent's TCP port (plain HTTP on the link-local address)."""
INSTANCE_METADATA_ADDRESS = "169.254.169.254"
"""EC2's instance metadata service (the node's own credentials): a pod with Pod Identity has
no use for it."""
