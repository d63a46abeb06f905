"""A team's own CDK app built on mlcc-constructs: its VPC, its model bucket (and a shared one
it imports), its admin roles, a ServingCluster on them and a ServedModel on that cluster.

This file is what a team writes: it imports only ``aws_cdk`` and the package root. The tests
synthesise it (tests/aws/test_team_app.py) and type-check it with ``mypy --strict`` against the
built wheel."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2, aws_iam as iam, aws_s3 as s3
from constructs import Construct

from mlcc_constructs import (
    ComputeSpec,
    DeploymentSpec,
    EngineSpec,
    ModelSpec,
    RenderContext,
    ServedModel,
    ServedModelProps,
    ServingCluster,
    ServingClusterProps,
    prepare,
)

ACCOUNT = "123456789012"
REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b"]
MODELS = f"acme-models-{ACCOUNT}-{REGION}"
SHARED = "acme-shared-weights"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/acme-platform-admin"
MODEL = f"s3://{MODELS}/models/meta-llama/Llama-3.1-8B-Instruct/"


class TeamServingStack(cdk.Stack):
    """The team's serving stack: ``vpc``, ``models``, ``serving`` and ``model``."""

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id, env=cdk.Environment(account=ACCOUNT, region=REGION))
        # Offline synth: the stack's zones come from here, not from a lookup.
        self.node.set_context(f"availability-zones:account={ACCOUNT}:region={REGION}", ZONES)
        self.vpc = ec2.Vpc(
            self,
            "TeamVpc",
            max_azs=2,
            nat_gateways=1,
            flow_logs={"FlowLog": ec2.FlowLogOptions()},
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Public", subnet_type=ec2.SubnetType.PUBLIC),
                ec2.SubnetConfiguration(
                    name="Private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                ),
                # Load balancers only: the deployments' NetworkPolicies admit these CIDRs.
                ec2.SubnetConfiguration(
                    name="LoadBalancers",
                    subnet_type=ec2.SubnetType.PRIVATE_ISOLATED,
                    cidr_mask=24,
                ),
            ],
        )
        load_balancers = self.vpc.select_subnets(subnet_group_name="LoadBalancers").subnets
        self.models = s3.Bucket(
            self,
            "TeamModels",
            bucket_name=MODELS,
            versioned=True,
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        cdk.Validations.of(self.models).acknowledge(
            cdk.Acknowledgment(
                id="AwsSolutions-S1",
                reason="the team records S3 data events of its buckets in its organisation trail",
            )
        )
        shared = s3.Bucket.from_bucket_name(self, "SharedWeights", SHARED)
        on_call = iam.Role(
            self, "OnCall", assumed_by=iam.AccountPrincipal(ACCOUNT), description="on-call"
        )
        deployment = prepare(
            DeploymentSpec(
                engine=EngineSpec(name="vllm"),
                model=ModelSpec(uri=MODEL),
                compute=ComputeSpec(instance_type="ml.g5.2xlarge"),
                name="llama",
                namespace="team-a",
            ),
            # Prepared before the cluster exists (it sizes the GPU pool): its NetworkPolicy
            # admits the internal load balancers from these subnets.
            context=RenderContext(
                account=ACCOUNT,
                region=REGION,
                load_balancer_cidrs={"internal": [s.ipv4_cidr_block for s in load_balancers]},
            ),
        )
        self.serving = ServingCluster(
            self,
            "Serving",
            props=ServingClusterProps(
                cluster_name="acme-serving",
                vpc=self.vpc,
                admin_roles=[iam.Role.from_role_arn(self, "PlatformAdmin", ADMIN), on_call],
                endpoint_public_cidrs=["203.0.113.0/24"],
                gpu_instance_types=[deployment.resolution.instance.name],
                read_buckets=[self.models, shared],
                load_balancer_subnets={"internal": load_balancers},
            ),
        )
        self.model = ServedModel(
            self,
            "Llama",
            props=ServedModelProps(deployment=deployment, cluster=self.serving),
        )


def build() -> tuple[cdk.App, TeamServingStack]:
    """The team's app and its stack (not synthesised)."""
    app = cdk.App()
    return app, TeamServingStack(app, "AcmeServing")


if __name__ == "__main__":
    build()[0].synth()
