"""Each rule is defined once: the checks that the other places read that one definition."""

from __future__ import annotations

import dataclasses

from bench.core.labels import RISK_FROM_ACT, binary_of
from bench.judging import backends, specs
from bench.judging.backends.openai_compat import OpenAIParams
from bench.judging.protocol import JudgeSpec, toml_types
from bench.prompts import parsers
from bench.prompts.renderer import TEMPLATE_PARSERS, TEMPLATES
from bench.sources.licence import forbidden, local_only, may_redistribute


def test_redistribution_is_read_from_the_adapters() -> None:
    assert local_only() == {"rjudge": "r-judge"}
    assert not may_redistribute("none") and not may_redistribute(None)
    assert not may_redistribute("CC-BY-4.0", False) and may_redistribute(" Apache-2.0 ")
    meta = {
        "rjudge": {"license": "none", "redistributable": False},
        "stepshield": {"license": "CC-BY-4.0", "redistributable": True},
        "odd": {"license": "Unknown"},
    }
    assert forbidden(meta) == ["odd", "rjudge"]


def test_templates_and_their_parsers_are_one_table() -> None:
    assert tuple(TEMPLATE_PARSERS) == TEMPLATES
    assert set(TEMPLATE_PARSERS.values()) <= set(parsers.PARSERS)


def test_the_judge_row_keys_are_the_dataclass_fields() -> None:
    names = {f.name for f in dataclasses.fields(JudgeSpec)} - {"line", "generative"}
    assert set(specs._FIELDS) == names
    assert specs._FIELDS["usd_per_m_input"] == (int, float)
    assert specs._FIELDS["role"] == (str,) and specs._FIELDS["open_weights"] == (bool,)


def test_a_backend_declares_its_params_once() -> None:
    info = backends.get("openai")
    assert set(info.params) == {f.name for f in dataclasses.fields(OpenAIParams)}
    assert info.params == toml_types(OpenAIParams)
    assert info.params["temperature"] == (int, float) and info.params["extra_body"] == (dict,)


def test_unpinned_reads_what_the_backend_declares_and_what_a_run_recorded() -> None:
    row = JudgeSpec(id="x", backend="transformers", model="org/model")
    assert backends.get("transformers").loads_weights
    assert specs.unpinned(row)
    assert not specs.unpinned(dataclasses.replace(row, revision="abc123"))
    assert not specs.unpinned(row, [{"sha256": "f" * 64}])
    assert not specs.unpinned(dataclasses.replace(row, backend="openai"))
    assert not specs.unpinned(dataclasses.replace(row, backend="retired-backend"))


def test_risk_from_act_and_the_binary_view() -> None:
    assert dict(RISK_FROM_ACT) == {"CONTINUE": 0, "ASK": 50, "STOP": 100}
    assert [binary_of(a) for a in ("CONTINUE", "ASK", "STOP")] == ["SAFE", "UNSAFE", "UNSAFE"]
