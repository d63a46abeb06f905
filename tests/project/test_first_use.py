"""First use: cdk.json opts out of CLI telemetry and holds no reserved ``aws:`` context key (the
app turns stack traces off itself), rendered/ is ignored, ServingChart refuses a CDK scope,
``mlcc rollout`` defaults to the target it rolls out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import aws_cdk as cdk
import cdk8s
import constructs
import pytest

from mlcc_constructs.core.support.errors import MlccError
from mlcc_constructs.k8s.serving_chart import ServingChart
from tests._cdk_app import reference_entries
from tests._flat import flat_spec

REPO = Path(__file__).resolve().parents[2]


def test_cdk_json_turns_cli_telemetry_off() -> None:
    # https://docs.aws.amazon.com/cdk/v2/guide/cli-telemetry.html: context "cli-telemetry": false
    settings = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))
    assert settings["context"]["cli-telemetry"] is False


@pytest.mark.parametrize("line", ["rendered/", "cdk.out/", "dist/"])
def test_generated_folders_are_git_ignored(line: str) -> None:
    assert line in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_cdk_json_holds_no_reserved_aws_context_key() -> None:
    # The CDK CLI warns about every cdk.json context key starting with "aws:" (aws-cdk
    # lib/cli/user-configuration.js, warnAboutContextKey), on every command.
    settings = json.loads((REPO / "cdk.json").read_text(encoding="utf-8"))
    assert [key for key in settings["context"] if key.startswith("aws:")] == []


def test_the_cdk_cli_reads_cdk_json_without_a_warning() -> None:
    # `cdk context` loads cdk.json as `cdk synth` does (the same reserved-key check) without
    # running the app: whatever it prints on stderr is about our configuration.
    env = {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true"}
    done = subprocess.run(
        [str(REPO / "node_modules/.bin/cdk"), "context", "--no-notices", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["profile"] == "dev"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, True),  # the app's own default
        ({"aws:cdk:disable-stack-trace": False}, False),  # -c wins
        ({"aws:cdk:disable-creation-stack-traces": False}, True),
    ],
)
def test_the_app_turns_stack_traces_off_unless_the_context_says(
    given: dict[str, bool], expected: bool
) -> None:
    from mlcc_constructs.aws.stable_synth import TRACE_CONTEXT, quiet_stack_traces

    app = cdk.App(context=given)
    quiet_stack_traces(app)
    assert app.node.try_get_context("aws:cdk:disable-stack-trace") is expected
    for key in TRACE_CONTEXT:
        assert app.node.try_get_context(key) is given.get(key, True)


def test_the_app_records_no_creation_stack_trace() -> None:
    from tests._cdk_app import BUCKETS_STACK, stack

    buckets = stack(BUCKETS_STACK)
    types = {entry.type for c in buckets.node.find_all() for entry in c.node.metadata}
    assert "aws:cdk:logicalId" in types  # metadata is recorded, ...
    assert not {t for t in types if "stack" in t.lower() or "trace" in t.lower()}  # ... no traces


def _cdk_stack() -> constructs.Construct:
    return cdk.Stack(cdk.App(), "S")


def _under_a_stack() -> constructs.Construct:
    return constructs.Construct(_cdk_stack(), "Group")


@pytest.mark.parametrize("scope", [_cdk_stack, cdk.App, _under_a_stack])
def test_serving_chart_outside_a_cdk8s_app_is_refused(scope: object) -> None:
    with pytest.raises(MlccError) as caught:
        ServingChart(scope(), "Chart", props=None)  # type: ignore[operator, arg-type]
    assert "must be in a cdk8s App" in str(caught.value)
    assert caught.value.problems[0].fix.startswith("create it in cdk8s.App()")


def test_serving_chart_in_a_cdk8s_app_gets_past_the_scope_check() -> None:
    with pytest.raises(Exception) as caught:
        ServingChart(cdk8s.App(), "Chart", props=None)  # type: ignore[arg-type]
    assert "must be in a cdk8s App" not in str(caught.value)


ROLLOUT_SPEC = [
    "--engine", "vllm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
    "--instance-type", "ml.g5.12xlarge", "--name", "llama", "--cluster", "hp",
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "file_text", "target"),
    [
        (["rollout", "check", *ROLLOUT_SPEC], None, "hyperpod-eks"),
        (["rollout", "apply", *ROLLOUT_SPEC], None, "hyperpod-eks"),
        (["rollout", "check", *ROLLOUT_SPEC, "--target", "eks"], None, "eks"),
        (["rollout", "check", "--cluster", "hp"], "target: eks\n", "eks"),  # the file's own
        (["rollout", "check", "--cluster", "hp"], "", "hyperpod-eks"),
        (
            ["rollout", "check", "--cluster", "hp", "--target", "hyperpod-eks"],
            "target: eks\n",
            "hyperpod-eks",
        ),
        (["render", *ROLLOUT_SPEC[:-2]], None, "eks"),  # render's own default is unchanged
    ],
    ids=["check", "apply", "flag", "file", "file-without", "flag-over-file", "render"],
)
def test_rollout_defaults_to_the_target_it_rolls_out(
    tmp_path: Path, argv: list[str], file_text: str | None, target: str
) -> None:
    from mlcc_constructs.cli import build_parser
    from mlcc_constructs.cli._common import spec_from_args

    if file_text is not None:
        spec_file = tmp_path / "spec.yaml"
        spec_file.write_text(
            file_text + "engine: {name: vllm}\nmodel: {uri: meta-llama/Llama-3.1-8B-Instruct}\n"
            "compute: {instance_type: ml.g5.12xlarge}\nname: llama\n",
            encoding="utf-8",
        )
        argv = [*argv, "-f", str(spec_file)]
    args = build_parser(argv[0]).parse_args(argv)
    assert spec_from_args(args).spec.target == target


def test_rollout_help_names_its_default_target() -> None:
    from mlcc_constructs.cli import build_parser

    parser = build_parser("rollout")
    (rollout,) = (a for a in parser._actions if a.dest == "command")
    check = rollout.choices["rollout"]._actions[-1].choices["check"]  # type: ignore[union-attr]
    (option,) = (a for a in check._actions if "--target" in a.option_strings)
    assert option.help is not None and "else hyperpod-eks" in option.help


PREFIX = "models/meta-llama/Llama-3.1-8B-Instruct/"
DEV = {"account": "123456789012", "region": "us-east-1", "profile": "dev"}
DEV_BUCKET = "mlcc-models-dev-123456789012-us-east-1"


def _prepared_model(model: str, **context: str) -> str:
    from mlcc_constructs.core.serving.prepared import prepare
    from mlcc_constructs.core.serving.spec.context import RenderContext

    spec = flat_spec(
        engine="vllm", model=model, instance_type="ml.g5.12xlarge", name="llama",
        namespace="inference",
    )  # fmt: skip
    prepared = prepare(spec, context=RenderContext(**context))
    assert prepared.resolution.source.uri == prepared.spec.model.uri  # what the objects read
    return prepared.spec.model.uri


@pytest.mark.parametrize(
    ("model", "context", "expected"),
    [
        ("s3://${model_bucket}/" + PREFIX, DEV, f"s3://{DEV_BUCKET}/{PREFIX}"),
        (
            "s3://${model_bucket}/" + PREFIX,
            {"account": "999999999999", "region": "eu-west-1", "profile": "prod"},
            f"s3://mlcc-models-prod-999999999999-eu-west-1/{PREFIX}",
        ),
        (f"s3://{DEV_BUCKET}/{PREFIX}", DEV, f"s3://{DEV_BUCKET}/{PREFIX}"),  # ours, same env
        ("s3://team-models/" + PREFIX, DEV, "s3://team-models/" + PREFIX),  # the team's own
        # profile-less: the pre-migration names are outside stacks/buckets.json's patterns
        (
            "s3://mlcc-models-999999999999-us-east-1/" + PREFIX,
            DEV,
            "s3://mlcc-models-999999999999-us-east-1/" + PREFIX,
        ),
        (f"s3://{DEV_BUCKET}/{PREFIX}", {}, f"s3://{DEV_BUCKET}/{PREFIX}"),  # env inferred
    ],
    ids=["placeholder", "placeholder-prod", "same-env", "own-bucket", "legacy-name", "no-context"],
)
def test_the_model_bucket_follows_the_environment(
    model: str, context: dict[str, str], expected: str
) -> None:
    assert _prepared_model(model, **context) == expected


@pytest.mark.parametrize(
    ("model", "context", "message"),
    [
        (
            "s3://mlcc-models-dev-999999999999-us-east-1/" + PREFIX,
            DEV,
            "/model/uri: the model bucket is the 'core' bucket of another environment (account "
            "999999999999 where the deployment's is 123456789012) (got 's3://mlcc-models-dev-"
            f"999999999999-us-east-1/{PREFIX}'; allowed: s3://{DEV_BUCKET}/... or a bucket of "
            f"your own; fix: write s3://{DEV_BUCKET}/{PREFIX} or s3://${{model_bucket}}/{PREFIX})",
        ),
        (
            "s3://mlcc-models-prod-123456789012-us-west-2/" + PREFIX,
            DEV,
            "/model/uri: the model bucket is the 'core' bucket of another environment (region "
            "us-west-2 where the deployment's is us-east-1, profile prod where the deployment's "
            "is dev)",
        ),
        (
            "s3://mlcc-artifacts-prod-123456789012-us-east-1/" + PREFIX,
            DEV,
            "the 'artifacts' bucket of another environment (profile prod where the deployment's is "
            "dev) "
            "(got 's3://mlcc-artifacts-prod-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B"
            "-Instruct/'; allowed: s3://mlcc-artifacts-dev-123456789012-us-east-1/... or a bucket "
            "of your own; fix: write s3://mlcc-artifacts-dev-123456789012-us-east-1/models/",
        ),
        (
            "s3://${model_bucket}/" + PREFIX,
            {"region": "us-east-1"},
            "/model/uri: ${model_bucket} (the model bucket, stacks/buckets.json 'core') needs "
            "account, profile (got '${model_bucket}'; fix: pass --account --profile",
        ),
        (
            "s3://${models}/" + PREFIX,
            DEV,
            "/model/uri: not a placeholder of the model bucket (got 's3://${models}/models/meta-llama/"
            "Llama-3.1-8B-Instruct/'; allowed: s3://${model_bucket}/<prefix>/ or "
            "s3://<bucket>/<prefix>/; fix: write s3://${model_bucket}/models/",
        ),
    ],
    ids=["account", "region-profile", "artifacts", "placeholder-no-env", "bad-placeholder"],
)
def test_another_environments_bucket_is_refused(
    model: str, context: dict[str, str], message: str
) -> None:
    with pytest.raises(MlccError) as caught:
        _prepared_model(model, **context)
    assert message in "\n".join(str(p) for p in caught.value.problems)


def _s3_models(entries: list[dict[str, object]]) -> list[str]:
    return [str(e["model"]["uri"]) for e in entries if str(e["model"]["uri"]).startswith("s3://")]


def test_the_reference_deployments_and_the_example_name_no_account() -> None:
    import yaml

    entries = reference_entries()
    example = yaml.safe_load((REPO / "examples/deployment.yaml").read_text(encoding="utf-8"))
    models = _s3_models([*entries, example])
    assert len(models) == 5  # three llama-8b, the 405B (two nodes), the example
    assert all(m.startswith("s3://${model_bucket}/") for m in models)


@pytest.mark.parametrize("account", ["123456789012", "999999999999"])
def test_a_new_account_moves_the_reference_mounts_with_it(account: str) -> None:
    from mlcc_constructs.core.serving.spec.app_deployments import prepare_deployments

    entries = [e for e in reference_entries() if "autoscaling" not in e.get("scaling", {})]
    found = prepare_deployments(
        entries, defaults={"account": account, "region": "us-east-1", "profile": "dev"}
    )
    buckets = {
        o.object["spec"]["csi"]["volumeAttributes"]["bucketName"]
        for d in found
        for o in d.prepared.objects
        if o.object["kind"] == "PersistentVolume"
    }
    assert buckets == {f"mlcc-models-dev-{account}-us-east-1"}


NOTE = "mlcc: note: Node.js 20 is past its end of life (2026-04-30) and jsii's support"


@pytest.mark.parametrize(
    ("major", "code", "exported", "stderr"),
    [
        ("20", 0, "20", NOTE),  # tested here: one note from us, jsii's banner silenced
        ("22", 0, "", ""),  # current LTS: jsii supports it, nothing set, nothing said
        ("24", 0, "", ""),
        ("18", 2, None, "mlcc: Node.js 18 is too old: the CDK app needs Node.js 20 or later"),
        ("", 2, None, "mlcc: node is not on PATH"),
    ],
    ids=["20", "22", "24", "18", "none"],
)
def test_make_says_what_it_does_about_the_node_release(
    major: str, code: int, exported: str | None, stderr: str
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "MAKEFLAGS", "MAKELEVEL")
    }
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "node-env", f"NODE_MAJOR={major}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code
    assert (stderr in done.stderr) and (bool(stderr) or done.stderr == "")
    assert done.stderr.count("mlcc:") == (1 if stderr else 0)  # once
    if code == 0 and stderr:  # a note of ours, not make's "Makefile:NN:" warning
        assert done.stderr.startswith(stderr)
    if exported is not None:
        assert done.stdout == f"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION={exported}\n"


def test_the_node_facts_match_the_pinned_jsii_runtime() -> None:
    # The Makefile's dates are jsii's: Node 20 end of life 2026-04-30 (its support six months
    # later), 22 2027-04-30, 24 2028-04-30, in the runtime the Python jsii package embeds.
    import jsii

    runtime = Path(jsii.__file__).parent / "_embedded/jsii/bin__jsii-runtime.js"
    text = runtime.read_text(encoding="utf-8")
    for major, end in (("20", "2026-04-30"), ("22", "2027-04-30"), ("24", "2028-04-30")):
        assert f'new NodeRelease({major},{{endOfLife:new Date("{end}")}})' in text
    assert "DEFAULT_EXTENDED_SUPPORT_MONTHS=6" in text
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "end of life (2026-04-30) and jsii's support (2026-10-30)" in makefile
