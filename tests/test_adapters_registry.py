"""A family is one place: its class states its facts (name, checkpoint, serve flags, viewport,
frame, resize, prompts) and one line of the registry table names it; every list — the --agent
help, serve-command, parse/show-prompt choices, the browser viewport default — derives from
them, and no product code branches on a family's name."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from regionfocus.adapters import registry
from regionfocus.adapters.cli import build_parser as adapters_parser
from regionfocus.adapters.cli_args import reads_pixels, runs_locally, text_only_config
from regionfocus.adapters.families.grounders import GrounderAdapter
from regionfocus.adapters.serving import serve_command
from regionfocus.config import RegionFocusConfig
from regionfocus.webvoyager.cli import default_viewport

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("adapters", "regionfocus", "webvoyager", "screenspot_pro", "aitz")


def test_every_table_entry_is_its_class_name():
    for name in (*registry.FAMILIES, *registry.AGENTS):
        assert registry.family_class(name).name == name


def test_lists_derive_from_the_table():
    assert registry.families() == tuple(registry.FAMILIES)
    # The hosted families (a provider serves them) have no `vllm serve` line.
    assert registry.served_families() == tuple(n for n in registry.FAMILIES if not registry.facts(n).provider)
    assert registry.VLM_FAMILIES == tuple(registry.FAMILIES)
    # Plug-ins registered at run time (other tests register some) come on top of the table.
    assert set(registry.FAMILIES) | set(registry.AGENTS) <= set(registry.agent_names())


@pytest.mark.parametrize(
    ("agent", "viewport"),
    [
        ("uitars-1.0", (1440, 1440)),
        ("uitars-1.5", (1440, 1440)),
        ("qwen2.5-vl", (2240, 1260)),
        ("qwen3-vl", (2240, 1260)),
        # Issue 32 item 5: the Qwen-based grounders got UI-TARS's window through a name prefix.
        ("gui-owl-1.5", (2240, 1260)),
        ("mai-ui", (2240, 1260)),
        ("ocr", (1440, 1440)),
    ],
)
def test_the_browser_viewport_is_the_family_fact(agent, viewport):
    assert default_viewport(agent) == viewport


def test_an_unknown_agent_has_no_viewport():
    with pytest.raises(ValueError, match="unknown adapter 'nope'; known: "):
        default_viewport("nope")


def test_agent_kinds_are_facts():
    assert [runs_locally(a) for a in ("ocr", "a11y", "screen-text", "qwen3-vl")] == [True, True, False, False]
    assert [reads_pixels(a) for a in ("ocr", "screen-text", "mai-ui")] == [True, False, True]
    cfg = text_only_config("screen-text", RegionFocusConfig())
    assert (cfg.history, cfg.aggregation) == ("text", "text")


class _NewGrounder(GrounderAdapter):
    """A Qwen-based grounder as a plug-in writes one: data only."""

    name = "test-new-grounder"
    checkpoint = "example/New-Grounder-7B"
    frame = "relative"
    user_file = "official/ui_venus15_screenspot_prompt.txt"


def test_a_new_family_appears_everywhere_from_its_class():
    registry.register_adapter(_NewGrounder.name, _NewGrounder, replace=True)
    try:
        assert _NewGrounder.name in registry.families()
        assert _NewGrounder.name in registry.agent_names()
        argv = shlex.split(serve_command(_NewGrounder.name))
        assert argv[:3] == ["vllm", "serve", "example/New-Grounder-7B"]
        assert "--generation-config" in argv
        assert default_viewport(_NewGrounder.name) == (2240, 1260)  # Qwen-based: Qwen's window
        args = adapters_parser().parse_args(["serve-command", "--agent", _NewGrounder.name])
        assert args.agent == _NewGrounder.name
        a = registry.get_adapter(_NewGrounder.name)
        assert a.parse_action("[500,250]", 2000, 1000).point.x == 1000
    finally:
        registry._REGISTRY.pop(_NewGrounder.name, None)


def test_serve_command_refuses_an_agent_without_a_checkpoint():
    with pytest.raises(ValueError, match="serve-command knows: uitars-1.0, "):
        serve_command("a11y")


def test_no_product_code_branches_on_a_family_name():
    """Family names appear in the product only as a class's ``name`` and in the registry table;
    no prefix test such as ``agent.startswith("qwen")``."""
    names = set(registry.FAMILIES)
    literal = re.compile(r"""["']([a-z0-9][a-z0-9.\-]*)["']""")
    prefix = re.compile(r"""\.(?:startswith|endswith)\(\s*["']([^"']*)["']""")
    found = []
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "registry.py" and path.parent.name == "adapters":
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                # A class's own name, and a hosted backend's provider or SDK (the provider's
                # key in prompts/hosted/models.json, which a family name may equal).
                if re.match(r"\s*(?:name|provider|sdk_module)\s*=", line):
                    continue
                # A module's name (the openai package, its loggers) is not a family's.
                hits = [
                    m for m in literal.findall(line) if m in names and importlib.util.find_spec(m) is None
                ]
                hits += [p for p in prefix.findall(line) if p and any(f.startswith(p) for f in names)]
                if hits:
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
