from __future__ import annotations

from pathlib import Path

import pytest
from specgate.gateway.cli import main

from specgate.config import ConfigError, GatewayConfig, load_config, parse_pool_flag, validate_config


def test_empty_config_has_working_defaults() -> None:
    config = validate_config(None)
    assert config == GatewayConfig()
    assert config.server.max_body_bytes == 4 * 1024 * 1024


def test_full_pool_config() -> None:
    config = validate_config(
        {
            "pools": [
                {
                    "name": "code",
                    "model": "m",
                    "endpoints": ["http://a:1/", "http://b:2"],
                    "speculation": {"method": "ngram", "max_k": 4, "per_request_k": True},
                }
            ]
        }
    )
    assert config.pools[0].endpoints == ["http://a:1", "http://b:2"]
    assert config.models() == ["m"]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"pools": [{"name": "p", "model": "m", "endpoints": ["ftp://x"]}]}, "pools.0.endpoints"),
        ({"pools": [{"name": "p", "model": "m", "endpoints": []}]}, "pools.0.endpoints"),
        (
            {"pools": [{"name": "p", "model": "m", "endpoints": ["http://a"], "speculation": {"method": "ngram"}}]},
            "pools.0.speculation",
        ),
        (
            {"pools": [{"name": "p", "model": "m", "endpoints": ["http://a"], "speculation": {"draft_cost": 0.02}}]},
            "pools.0.speculation",
        ),
        (
            {
                "pools": [
                    {
                        "name": "p",
                        "model": "m",
                        "endpoints": ["http://a"],
                        "speculation": {"method": "draft_model", "max_k": 4, "draft_cost": -0.1},
                    }
                ]
            },
            "pools.0.speculation.draft_cost",
        ),
        (
            {
                "pools": [
                    {
                        "name": "p",
                        "model": "m",
                        "endpoints": ["http://a"],
                        "speculation": {"method": "eagle", "max_k": 4, "step_time": {"floor_s": 0.01}},
                    }
                ]
            },
            "pools.0.speculation.step_time.per_token_s",
        ),
        (
            {
                "pools": [
                    {
                        "name": "p",
                        "model": "m",
                        "endpoints": ["http://a"],
                        "speculation": {"step_time": {"floor_s": 0.01, "per_token_s": 0.0001}},
                    }
                ]
            },
            "pools.0.speculation",
        ),
        ({"server": {"port": 0}}, "server.port"),
        ({"server": {"prot": 1}}, "server.prot"),
        ({"pools": [{"name": "p", "model": "m", "endpoints": ["http://a"]}] * 2}, "pools"),
    ],
)
def test_errors_name_their_field_path(data: dict, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_config(data)
    assert any(line.startswith(path + ":") for line in info.value.problems), info.value.problems


def test_every_error_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("server: {port: 99999, max_body_bytes: 1}\npools: [{name: 'bad name', model: m, endpoints: [x]}]\n")
    with pytest.raises(ConfigError) as info:
        load_config(f)
    assert len(info.value.problems) == 4


def test_bad_yaml_and_missing_file(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("pools: [\n")
    with pytest.raises(ConfigError, match="yaml"):
        load_config(f)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.yaml")


def test_pool_flag() -> None:
    assert parse_pool_flag("m=http://a:1,http://b:2", 0) == {
        "name": "pool-0",
        "model": "m",
        "endpoints": ["http://a:1", "http://b:2"],
    }
    with pytest.raises(ConfigError):
        parse_pool_flag("no-url", 0)


def test_check_config_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("pools: [{name: p, model: m, endpoints: ['http://127.0.0.1:1']}]\n")
    assert main(["check-config", str(good)]) == 0
    assert "ok (1 pool(s), models: m)" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("retries: {max_attempts: 0}\n")
    assert main(["check-config", str(bad)]) == 1
    assert "retries.max_attempts:" in capsys.readouterr().out


def test_example_config_is_valid() -> None:
    root = Path(__file__).resolve().parents[1]
    config = load_config(root / "examples" / "specgate.yaml")
    assert config.pools


def _pool_with(auth: dict) -> dict:
    return {"pools": [{"name": "p", "model": "m", "endpoints": ["http://e:8000"], "auth": auth}]}


def test_pool_credentials_from_config_or_environment_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    config = validate_config(_pool_with({"api_key": "sk-abc", "headers": {"X-Tenant": "t1"}}))
    auth = config.pools[0].auth
    assert auth.header_values() == {"authorization": "Bearer sk-abc", "x-tenant": "t1"}
    assert "sk-abc" not in repr(config) and "t1" not in repr(config)
    monkeypatch.setenv("ENGINE_KEY", "sk-from-env")
    assert validate_config(_pool_with({"api_key_env": "ENGINE_KEY"})).pools[0].auth.header_values() == {
        "authorization": "Bearer sk-from-env"
    }


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"api_key_env": "SPECGATE_TEST_UNSET_VARIABLE"}, "SPECGATE_TEST_UNSET_VARIABLE is not set"),
        ({"api_key": "a", "api_key_env": "HOME"}, "not both"),
        ({"headers": {"bad header": "x"}}, "not a valid HTTP header name"),
        ({"headers": {"Content-Length": "3"}}, "set by the gateway"),
        ({"headers": {"Authorization": "Bearer x"}}, "use api_key"),
        ({"headers": {"x-a": "line\nbreak"}}, "printable ASCII"),
        ({"api_key": "sk-\u00e9"}, "printable ASCII"),
    ],
)
def test_bad_pool_credentials_are_config_errors(auth: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_config(_pool_with(auth))
    assert message in str(err.value) and "pools.0.auth" in str(err.value)


@pytest.mark.parametrize(
    ("exporter", "package"),
    [("otlp-http", "opentelemetry-exporter-otlp-proto-http"), ("otlp-grpc", "opentelemetry-exporter-otlp-proto-grpc")],
)
def test_an_exporter_that_is_not_installed_is_a_config_error(
    exporter: str, package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused when the config is loaded, not when the first span is exported (or at startup, as a crash)."""
    import importlib.util

    assert validate_config({"tracing": {"exporter": exporter}}).tracing.exporter == exporter  # installed here
    real = importlib.util.find_spec

    def without_otlp(name: str, *args: object) -> object:
        if name.startswith("opentelemetry.exporter.otlp"):
            raise ModuleNotFoundError(name)
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", without_otlp)
    with pytest.raises(ConfigError, match=f"needs {package}.*specgate\\[otlp\\]"):
        validate_config({"tracing": {"exporter": exporter}})
    assert validate_config({"tracing": {"exporter": "console"}}).tracing.exporter == "console"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user:pw@engine:8000", "credentials in the URL"),
        ("http://engine:8000/?x=1", "query or fragment"),
        ("http://engine:8000#top", "query or fragment"),
        ("http://m\u00f6tor:8000", "must be ASCII"),
        ("http://engine:99999", "port is not a valid number"),
        ("engine:8000", "http(s) base URL"),
    ],
)
def test_endpoint_urls_the_client_cannot_use_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_config({"pools": [{"name": "p", "model": "m", "endpoints": [url]}]})
    assert message in str(err.value)


def test_tls_files_that_do_not_load_are_config_errors(tmp_path: Path) -> None:
    junk = tmp_path / "ca.pem"
    junk.write_text("not a certificate\n")
    pool = {"name": "p", "model": "m", "endpoints": ["https://e:8000"], "tls": {"ca_file": str(junk)}}
    with pytest.raises(ConfigError, match="cannot load the TLS files"):
        validate_config({"pools": [pool]})
    pool["tls"] = {"cert_file": str(junk)}
    with pytest.raises(ConfigError, match="cert_file and key_file go together"):
        validate_config({"pools": [pool]})
    pool["tls"] = {"ca_file": str(tmp_path / "missing.pem")}
    with pytest.raises(ConfigError, match="not a readable file"):
        validate_config({"pools": [pool]})


def test_a_yaml_error_does_not_quote_the_line_it_is_on(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text('pools:\n  - name: p\n    api_key: "sk-do-not-leak\n  x: [\n')
    with pytest.raises(ConfigError) as info:
        load_config(f)
    (problem,) = info.value.problems
    assert "sk-do-not-leak" not in problem and "line" in problem


def test_the_readable_config_hides_passwords_queries_and_receiver_paths() -> None:
    from specgate.config import redacted

    config = validate_config(
        {
            "pools": [{"name": "p", "model": "m", "endpoints": ["http://127.0.0.1:9/v1"]}],
            "state": {"redis_url": "redis://user:hunter2@redis:6379/0"},
            "alerts": {
                "receivers": [{"name": "s", "url": "https://hooks.example.com/services/T0/SECRET", "format": "slack"}]
            },
        }
    )
    shown = redacted(config)
    text = repr(shown)
    assert "hunter2" not in text and "SECRET" not in text
    assert shown["state"]["redis_url"] == "redis://user:**********@redis:6379/0"
    assert shown["alerts"]["receivers"][0]["url"] == "https://hooks.example.com/**********"
    assert shown["pools"][0]["endpoints"] == ["http://127.0.0.1:9/v1"]  # nothing secret: left readable
