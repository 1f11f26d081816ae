"""`cache_ttl: none`: the anthropic shape sends no `cache_control`, the artifact counts nothing as
cached, and the cost model prices every request at the input rate."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from promptc import compile_text
from promptc.facts.config import Config, validate
from promptc.runtime.render import render_artifact
from promptc.tools.cost import facts_from_artifact, tree_cost

from . import sdk_capture

STABLE = "Answer from the policy and cite the article you used. " * 150
SOURCE = f"/// param: model=claude-sonnet-4-5, max_tokens=64\n/// cache_ttl: none\n----- system -----\n{STABLE}\n----- user -----\n${{q}}\n"


@pytest.mark.slow  # through the real SDKs; CI runs it
def test_no_breakpoint_is_sent_and_nothing_is_counted_as_cached() -> None:
    result = compile_text(SOURCE, name="p")
    artifact = result.artifact
    assert artifact is not None and [d.code for d in result.diagnostics] == []
    assert artifact.cache.ttl == "none" and artifact.cache.cacheable_tokens == 0
    assert artifact.cache.prefix_tokens > 1024  # the prefix is there; only the markers are not
    assert artifact.cache.breakpoints and not any(b.anthropic for b in artifact.cache.breakpoints)
    rendered = render_artifact(artifact, {"q": "Refund?"})
    request = rendered.as_shape("anthropic")
    assert "cache_control" not in json.dumps(request)
    sent = sdk_capture.capture_anthropic(request)["json"]  # the SDK takes it as it is
    assert "cache_control" not in json.dumps(sent)
    cached = compile_text(SOURCE.replace("none", "1h"), name="p").artifact
    assert cached.cache.prefix_sha256 == artifact.cache.prefix_sha256  # the TTL keys no cache
    assert "cache_control" in json.dumps(render_artifact(cached, {"q": "Refund?"}).as_shape("anthropic"))


def test_the_cost_of_none_is_the_uncached_cost() -> None:
    artifact = compile_text(SOURCE, name="p").artifact
    (cost,) = tree_cost([facts_from_artifact(artifact)], {"p": Decimal(1000)}).prompts
    assert cost.day_with_cache == cost.day_without_cache


def test_none_is_a_ttl_of_the_language_and_the_config() -> None:
    assert validate(Config(cache_ttl="none")) is None
    (bad,) = [d for d in compile_text("/// cache_ttl: 2h\nHi\n", name="p").diagnostics if d.code == "E710"]
    assert "write one of: 5m, 1h, 30m, 12h, none" in (bad.hint or "")
