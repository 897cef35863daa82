"""The fleet's configuration without a cluster: the KubeRay example in docs/fleet.md, the Serve config builder, the CLI's checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("ray.serve", reason="the fleet extra is not installed: pip install 'avatarstream[fleet]'")

import yaml
from ray.serve.schema import ServeDeploySchema

from avatarstream.cli.main import main
from avatarstream.errors import InputError
from avatarstream.fleet.app import FleetArgs, app_builder
from avatarstream.fleet.settings import FleetSettings
from avatarstream.serve.settings import ServeSettings

DOC = Path(__file__).parents[2] / "docs" / "fleet.md"
TINY = ServeSettings(model="demo-tiny")


def test_the_kuberay_example_is_a_valid_rayservice_whose_app_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.DOTALL)
    service = yaml.safe_load(blocks[0])
    assert service["kind"] == "RayService" and service["apiVersion"] == "ray.io/v1"
    config = ServeDeploySchema.model_validate(yaml.safe_load(service["spec"]["serveConfigV2"]))
    assert config.proxy_location == "HeadOnly"
    (application,) = config.applications
    module, _, name = application.import_path.partition(":")
    assert (module, name) == ("avatarstream.fleet.app", "app_builder")
    assert service["spec"]["rayClusterConfig"]["rayVersion"] == __import__("ray").__version__, "the example names the pinned Ray"
    monkeypatch.setenv("AVATARSTREAM_TOKEN", "cluster-token-0123456789")
    built = app_builder(application.args)  # binds the deployments; no model loads until a replica starts
    assert type(built).__name__ == "Application"
    assert FleetArgs.model_validate(application.args).replica_gpus == 1


def test_config_args_are_checked() -> None:
    with pytest.raises(Exception, match="extra"):
        FleetArgs.model_validate({"model": "demo-tiny", "replicas": 3})  # a typo is refused, not ignored
    with pytest.raises(Exception, match="model"):
        FleetArgs.model_validate({})  # the model is named: the fleet has no default family
    with pytest.raises(InputError, match="token"):
        FleetSettings(serve=TINY, replica_host="auto")  # replicas reachable from other machines need a token
    with pytest.raises(InputError, match="min"):
        FleetSettings(serve=TINY, min_replicas=3, max_replicas=2)
    with pytest.raises(InputError, match="target-busy"):
        FleetSettings(serve=TINY, target_busy=1.5)
    with pytest.raises(InputError, match="--chunk-frames must be between 1 and 1000"):  # checked before Ray starts
        app_builder({"model": "demo-tiny", "model_options": {"chunk_frames": 0}})
    with pytest.raises(InputError, match="--scale must be between 2 and 4"):  # an upscaler's options, checked the same way
        app_builder({"model": "demo-tiny", "upscale": "bicubic", "upscale_options": {"scale": 9}})
    with pytest.raises(InputError, match="unknown upscaler 'nope'"):
        app_builder({"model": "demo-tiny", "upscale": "nope"})
    assert FleetSettings(serve=TINY, min_replicas=1, max_replicas=4).autoscales


def test_the_cli_refuses_bad_options_in_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["fleet", "--replicas", "2", "--max-replicas", "3"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "not both" in err
    monkeypatch.delenv("AVATARSTREAM_TOKEN", raising=False)
    assert main(["fleet", "--replica-host", "auto", "--token", ""]) == 2  # checked before Ray starts
    assert "--token" in capsys.readouterr().err
    with pytest.raises(SystemExit) as helped:
        main(["fleet", "--help"])
    assert helped.value.code == 0
    shown = capsys.readouterr().out
    assert "--replicas" in shown and "avatarstream[fleet]" in shown


def test_the_fleet_speaks_the_single_servers_api() -> None:
    """Same paths and methods as `serve` (the demo page is not in OpenAPI), plus where each session lives; its docs page needs
    no CDN."""
    from fastapi.testclient import TestClient

    from avatarstream.fleet.api import create_fleet_app
    from avatarstream.fleet.sessions import Fleet
    from avatarstream.serve.app import create_app

    fleet_app = create_fleet_app(Fleet(FleetSettings(serve=TINY), slots=None))
    fleet_paths = {(path, method) for path, ops in fleet_app.openapi()["paths"].items() for method in ops}
    single = create_app(TINY)
    single_paths = {(path, method) for path, ops in single.openapi()["paths"].items() for method in ops}
    assert fleet_paths == single_paths, "every route at the ingress (the video routes proxied to the replicas: docs/fleet.md)"
    for path in ("/sessions", "/jobs"):  # the same form fields, defaults and help: one form dependency serves both servers
        assert _form_fields(fleet_app.openapi(), path) == _form_fields(single.openapi(), path), path
        assert "contentSchema" in _form_fields(fleet_app.openapi(), path)[0]["model_options"], "the model's options, on both"
    info = fleet_app.openapi()["components"]["schemas"]["FleetSessionInfo"]["properties"]
    assert {"placement", "resumes", "speech_received_s"} <= set(info)
    page = TestClient(fleet_app).get("/docs")  # no lifespan: nothing here talks to Ray
    assert page.status_code == 200 and "cdn" not in page.text.lower()


def _form_fields(spec: dict, path: str) -> tuple[dict, list]:
    """The fields of the form that POST ``path`` takes, as its OpenAPI schema describes them."""
    ref = spec["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    schema = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema["properties"], sorted(schema.get("required", []))
