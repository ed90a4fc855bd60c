"""The hosted families (claude, gemini, openai), each through its provider's official SDK pointed
at a local server speaking that provider's wire format (tests/provider_servers.py): what the
request carries (the image at the size the model sees, the computer-use tool), how answers in
each family's own frame map back to screenshot pixels, what a call records (tokens, cache, the
served model, image sizes), and the retries: a 429 with the provider's retry hint waited out, a
cut reply failed and retried."""

from __future__ import annotations

import asyncio
import json

import pytest
from PIL import Image, ImageDraw

from regionfocus.actions import ActionType
from regionfocus.adapters.backends.base import ToolCall
from regionfocus.adapters.families.hosted import (
    Answer,
    ClaudeAdapter,
    GeminiAdapter,
    OpenAIAdapter,
    build_hosted,
    tool_calls,
)
from regionfocus.adapters.families.hosted_models import fit_patches, model_rule, seen_size
from regionfocus.geometry import Point
from regionfocus.model import Query
from regionfocus.trace import record_call

from .provider_servers import ProviderServer, Request, Said, act_recorded

KEY = "sk-test-secret-0123456789abcdef"
ENV = {"anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY", "openai": "OPENAI_API_KEY"}
AGENT = {"anthropic": "claude", "gemini": "gemini", "openai": "openai"}
SCREEN = (2560, 1440)  # a 1440p screenshot (the 4K sizes are checked offline, below)
TARGET = (2000, 260, 2070, 300)  # a red button on it, x0 y0 x1 y1
RED = (220, 30, 30)


@pytest.fixture(scope="module")
def screenshot() -> Image.Image:
    img = Image.new("RGB", SCREEN, (232, 232, 232))
    ImageDraw.Draw(img).rectangle((TARGET[0], TARGET[1], TARGET[2] - 1, TARGET[3] - 1), fill=RED)
    return img


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ENV.values():
        monkeypatch.setenv(name, KEY)


def _target_in(image: Image.Image) -> tuple[float, float]:
    """Centre of the red button as the server sees it (pixels of the received image)."""
    import numpy as np

    a = np.asarray(image.convert("RGB")).astype(int)
    ys, xs = np.nonzero((abs(a[..., 0] - RED[0]) < 40) & (a[..., 1] < 90) & (a[..., 2] < 90))
    return float(xs.mean()), float(ys.mean())


def _run(coro):
    return asyncio.run(coro)


class Slept(list):
    """A backend's ``sleep``: records each wait instead of spending it."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


async def _ask(provider: str, model: str, srv: ProviderServer, shot: Image.Image, sleep=None, **opts):
    adapter = build_hosted(AGENT[provider], model=model, base_url=srv.base_url, max_in_flight=2, **opts)
    if sleep is not None:
        adapter.backend.sleep = sleep
    try:
        return await adapter.act(shot, Query("click the red button")), adapter
    finally:
        await adapter.backend.aclose()


# ------------------------------------------------------------------ the rules as data
def test_image_rules_give_the_documented_sizes():
    # Claude's older vision page: the largest sizes not resized, by aspect ratio (1568 tokens).
    assert seen_size("anthropic", "claude-sonnet-4-5", (3000, 3000)) == (1092, 1092)
    assert seen_size("anthropic", "claude-sonnet-4-5", (900, 1600)) == (819, 1456)
    assert seen_size("anthropic", "claude-sonnet-4-5", (1000, 2000)) == (784, 1568)
    # A 4K screenshot: 1456x819 (52 x 30 = 1560 visual tokens); 2576x1449 on the newest tier.
    k4 = (3840, 2160)
    assert seen_size("anthropic", "claude-sonnet-4-5", k4) == (1456, 819)
    assert seen_size("anthropic", "claude-opus-4-7", k4) == (2576, 1449)
    assert model_rule("anthropic", "claude-opus-4-7").image().patches(k4) == 4784
    # OpenAI: GPT-5.4 high 2048 px / 2,500 patches, original keeps 4K; tile models 768 short side.
    assert seen_size("openai", "gpt-5.4", k4) == (2048, 1152)
    assert seen_size("openai", "gpt-5.4", k4, "original") == k4
    assert seen_size("openai", "gpt-4o", k4) == (1365, 768)
    assert seen_size("openai", "gpt-4o", (2048, 4096)) == (768, 1536)  # the page's worked example
    assert seen_size("openai", "gpt-4.1-mini", (1024, 1024)) == (1024, 1024)  # 1024 patches, under 1536
    assert seen_size("gemini", "gemini-2.5-flash", k4) == k4  # normalised frame: sent as is
    with pytest.raises(ValueError, match="detail 'original'"):
        model_rule("openai", "gpt-4o").image("original")


@pytest.mark.parametrize(
    "size", [(3840, 2160), (2560, 1600), (1170, 2532), (7999, 301), (1920, 1080), (5120, 2880)]
)
@pytest.mark.parametrize("limits", [(28, 1568, 1568), (28, 2576, 4784), (32, 2048, 2500), (32, 6000, 10000)])
def test_the_fit_is_inside_both_limits_and_the_largest(size, limits):
    patch, edge, budget = limits
    w, h = fit_patches(*size, patch, edge, budget)

    def cost(a: int, b: int) -> int:
        return -(-a // patch) * -(-b // patch)

    assert max(w, h) <= edge and cost(w, h) <= budget  # the provider keeps it as sent
    assert abs(w / h - size[0] / size[1]) < 0.01 * size[0] / size[1] + 2 / min(w, h)
    long, short = max(size), min(size)
    n = max(w, h) + 1  # one pixel longer breaks a limit (or is the original)
    assert n > min(long, edge) or cost(n, short * n // long) > budget


# ------------------------------------------------------------------ requests and frames
CASES = [
    # provider, model, request format, what the model writes (a function of the received image)
    ("anthropic", "claude-sonnet-4-5", "prompt"),
    ("anthropic", "claude-opus-4-7", "computer-use"),
    ("anthropic", "claude-opus-5-5", "computer-use"),
    ("openai", "gpt-5.4", "prompt"),
    ("openai", "gpt-5.4", "computer-use"),
    ("openai", "computer-use-preview", "computer-use"),
    ("gemini", "gemini-2.5-flash", "prompt"),
    ("gemini", "gemini-3-flash-preview", "computer-use"),
    ("gemini", "gemini-3.5-flash", "computer-use"),
]


def _answer(provider: str, model: str, request_format: str, miss: float):
    """A natural reply aimed ``miss`` received pixels right of the button's centre, in the
    family's own frame."""

    def respond(req: Request) -> Said:
        image = req.images[-1]
        x, y = _target_in(image)
        x += miss
        w, h = image.size
        if request_format == "computer-use":
            if provider == "anthropic":
                if "toolset" in json.dumps(req.tools):
                    return Said(
                        "I'll click it.", calls=[("left_click", {"coordinate": [round(x), round(y)]})]
                    )
                return Said(
                    "Clicking the red button.",
                    calls=[("computer", {"action": "left_click", "coordinate": [round(x), round(y)]})],
                )
            if provider == "openai":
                return Said(
                    None,
                    calls=[
                        ("computer_call", {"type": "click", "button": "left", "x": round(x), "y": round(y)})
                    ],
                )
            name = "click_at" if "3.5" not in req.model else "click"
            return Said(None, calls=[(name, {"x": round(x / w * 1000), "y": round(y / h * 1000)})])
        if provider == "anthropic":
            return Said(f"The red button is in the top-right toolbar.\n[[{round(x)},{round(y)}]]")
        if provider == "openai":
            return Said(
                f"Here it is: [[{(x - 8) / w:.4f},{(y - 5) / h:.4f},{(x + 8) / w:.4f},{(y + 5) / h:.4f}]]"
            )
        return Said(
            f'The button:\n```json\n[{{"point": [{round(y / h * 1000)}, {round(x / w * 1000)}], "label": "red button"}}]\n```'
        )

    return respond


@pytest.mark.parametrize(("provider", "model", "request_format"), CASES)
def test_the_request_carries_the_size_the_model_sees_and_the_answer_maps_back(
    provider, model, request_format, screenshot
):
    seen = seen_size(provider, model, SCREEN)
    miss = 45.0  # a near miss, in received pixels: it must come back scaled, not as 60 screen px
    with ProviderServer(provider, _answer(provider, model, request_format, miss)) as srv:
        reply, adapter = _run(_ask(provider, model, srv, screenshot, request=request_format))
        (req_headers,) = srv.stats.headers
        (body,) = srv.stats.bodies
    request = Request(provider, body, req_headers, model)
    (image,) = request.images
    assert image.size == seen
    # The answer lands where the scripted model aimed, mapped to screenshot pixels.
    x, y = _target_in(image)
    expect = Point((x + miss) * SCREEN[0] / seen[0], y * SCREEN[1] / seen[1])
    assert reply.action is not None and reply.action.type == ActionType.CLICK
    assert reply.point.distance(expect) <= 1.5 * SCREEN[0] / seen[0] + 4.0  # rounding in its frame
    assert TARGET[2] < reply.point.x < TARGET[2] + 50 * SCREEN[0] / seen[0]  # a miss, to the right
    # The call records the provider's counts and both sizes.
    u = reply.usage
    assert u.image_sent == [list(seen)] and u.image_seen == [list(seen)]
    assert u.prompt_tokens == 140 and u.completion_tokens == 12 and u.model == model and u.error is None
    tools = request.tools
    if request_format == "prompt":
        assert not tools
        return
    rule_tool = model_rule(provider, model).computer_tool
    if provider == "anthropic":
        (tool,) = tools
        assert tool["type"] == rule_tool["type"]
        if rule_tool.get("beta"):
            assert (tool["display_width_px"], tool["display_height_px"]) == seen
            assert rule_tool["beta"] in req_headers.get("anthropic-beta", "")
        else:
            assert "display_width_px" not in tool
    elif provider == "openai":
        (tool,) = tools
        assert tool["type"] == rule_tool["type"]
        if tool["type"] == "computer_use_preview":
            assert (tool["display_width"], tool["display_height"]) == seen and body["truncation"] == "auto"
    else:
        assert tools == [{"computerUse": {"environment": "ENVIRONMENT_BROWSER"}}]


def test_usage_counts_cached_input_as_each_api_reports_it(screenshot):
    """prompt_tokens is all input, cached included: Anthropic reports the cache read apart from
    input_tokens; OpenAI and Gemini include it in their input counts."""
    for provider, model in (
        ("anthropic", "claude-sonnet-4-5"),
        ("openai", "gpt-5.4"),
        ("gemini", "gemini-2.5-flash"),
    ):
        with ProviderServer(
            provider, Said("[[10, 10]] it is there", input_tokens=1500, cached_tokens=1200, output_tokens=9)
        ) as srv:
            reply, _ = _run(_ask(provider, model, srv, screenshot))
        assert (reply.usage.prompt_tokens, reply.usage.cached_tokens, reply.usage.completion_tokens) == (
            1500,
            1200,
            9,
        ), provider


# ------------------------------------------------------------------ failures and retries
HINT = 2.0


@pytest.mark.parametrize(
    ("provider", "busy"),
    [
        ("anthropic", Said.rate_limited("anthropic", HINT)),
        ("anthropic", Said.overloaded("anthropic", HINT)),
        ("openai", Said.rate_limited("openai", HINT)),
        ("gemini", Said.rate_limited("gemini", HINT)),
        ("gemini", Said.overloaded("gemini", HINT)),
    ],
    ids=["anthropic-429", "anthropic-529", "openai-429", "gemini-429-retryinfo", "gemini-503"],
)
def test_a_busy_provider_is_waited_out_as_it_asks(provider, busy, screenshot):
    model = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5.4", "gemini": "gemini-2.5-flash"}[provider]
    slept = Slept()
    with ProviderServer(provider, Said("[[40, 40]]  (the button)")) as srv:
        srv.script(busy)
        reply, _ = _run(_ask(provider, model, srv, screenshot, sleep=slept))
        statuses = list(srv.stats.statuses)
    assert statuses == [busy.status, 200]
    assert reply.usage.error is None and reply.point is not None
    assert slept == [HINT]  # the hint, once, by our loop (the SDK's own retries are off)
    assert (reply.usage.attempts, reply.usage.waited_s) == (2, HINT)  # counted in the call record


LENGTH_CUT = {"anthropic": "max_tokens", "gemini": "MAX_TOKENS", "openai": "incomplete"}
FILTERED = {"anthropic": "refusal", "gemini": "SAFETY"}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "gemini"])
def test_a_length_cut_fails_at_once_naming_the_budget_and_a_filtered_reply_is_retried(provider, screenshot):
    model = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-5.4", "gemini": "gemini-2.5-flash"}[provider]
    good = Said("It is the red button: [[1157, 159]]" if provider == "anthropic" else "[[0.79,0.19,0.8,0.2]]")
    if provider == "gemini":
        good = Said('[{"point": [194, 795], "label": "red button"}]')

    async def once(srv, **opts):
        adapter = build_hosted(AGENT[provider], model=model, base_url=srv.base_url, **opts)
        adapter.backend.sleep = Slept()
        out, call = await act_recorded(adapter, screenshot, "click the red button")
        return out, call, adapter

    with ProviderServer(provider, good) as srv:
        srv.script(Said.cut(provider))
        out, call, adapter = _run(once(srv, max_tokens=3000))
        assert srv.stats.requests == 1  # the same budget would stop at the same place: no retry
        sent = srv.stats.bodies[0]
    assert out is None and "output budget of 3000 tokens" in call.error and "--max-tokens" in call.error
    assert (
        sent.get(
            "max_tokens",
            sent.get("max_output_tokens", (sent.get("generationConfig") or {}).get("maxOutputTokens")),
        )
        == 3000
    )
    if provider in FILTERED:
        with ProviderServer(provider, good) as srv:
            srv.script(Said("The target is at [[412, 2", stop=FILTERED[provider]))
            out, _, _ = _run(once(srv))
            assert srv.stats.requests == 2  # a filtered reply may pass another time
        assert out is not None and TARGET[0] - 20 <= out.point.x <= TARGET[2] + 20


def test_the_key_comes_from_the_providers_variable_and_is_never_shown(monkeypatch, screenshot):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    adapter = build_hosted("claude", model="claude-sonnet-4-5", base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        _run(adapter.act(screenshot, Query("x")))
    monkeypatch.setenv("MY_GATEWAY_KEY", KEY)
    with ProviderServer(
        "anthropic",
        Said(
            status=401,
            error={"type": "error", "error": {"type": "authentication_error", "message": f"bad key {KEY}"}},
        ),
    ) as srv:
        adapter = build_hosted(
            "claude", model="claude-sonnet-4-5", base_url=srv.base_url, api_key_env="MY_GATEWAY_KEY"
        )
        calls: list = []
        _run(record_call(calls, "act", adapter.act(screenshot, Query("x"))))
        sent = srv.stats.headers[0]
    assert KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))
    assert calls[0].error and "401" in calls[0].error and KEY not in calls[0].error
    assert KEY not in repr(adapter) and KEY not in repr(adapter.backend)


# ------------------------------------------------------------------ parsing, offline
def test_each_family_reads_its_own_answers_and_frames():
    size = (1600, 1000)
    claude = ClaudeAdapter(model="claude-sonnet-4-5")  # sees 1390x868
    p = claude.parse_action("Looking at the toolbar, the icon is at [[695, 434]].", *size).point
    assert abs(p.x - 800) < 1 and abs(p.y - 500) < 1
    drag = Answer(
        "",
        [
            ToolCall(
                "computer",
                {"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [695, 434]},
            )
        ],
    )
    a = claude.parse_action(drag, *size)
    assert a.type == ActionType.DRAG and abs(a.end_point.x - 800) < 1
    shot = Answer("then [[10, 10]]", [ToolCall("computer", {"action": "screenshot"})])
    assert claude.parse_action(shot, *size) is None  # a screenshot call is no click at its numbers
    openai = OpenAIAdapter(model="gpt-4o")  # relative 0-1 in text
    p = openai.parse_action("[[0.25,0.5,0.35,0.6]]", *size).point
    assert (round(p.x), round(p.y)) == (480, 550)
    p = openai.parse_action(
        Answer("", [ToolCall("click", {"type": "click", "button": "right", "x": 614, "y": 384})]), *size
    )
    assert p.type == ActionType.RIGHT_CLICK and p.point.distance(Point(800, 500)) < 1.5  # 1229x768 seen
    gemini = GeminiAdapter(model="gemini-2.5-flash")
    p = gemini.parse_action('Sure!\n```json\n[{"point": [250, 750], "label": "Save"}]\n```', *size).point
    assert (p.x, p.y) == (1200.0, 250.0)  # [y, x]: y 250/1000 of 1000, x 750/1000 of 1600
    assert gemini.parse_point("[500, 100]", *size) == Point(160.0, 500.0)
    box = gemini.parse_action('[{"box_2d": [100, 200, 300, 400], "label": "x"}]', *size).point
    assert (box.x, box.y) == (480.0, 200.0)
    typed = gemini.parse_action(
        Answer("", [ToolCall("type_text_at", {"x": 500, "y": 500, "text": "hi", "press_enter": True})]), *size
    )
    assert (
        typed.type == ActionType.TYPE
        and typed.text == "hi"
        and typed.submit
        and typed.point == Point(800.0, 500.0)
    )
    # A tag written in the prose is prose: only calls the API returned as data are calls.
    assert tool_calls('<function_call name="click_at">{"x": 1, "y": 2}</function_call>') == ()
    assert gemini.fmt_point(*gemini.to_model(Point(160, 500), size)) == "[500, 100]"


def test_computer_use_needs_a_model_that_has_the_tool():
    with pytest.raises(ValueError, match="no computer-use tool"):
        GeminiAdapter(model="gemini-2.5-flash", request="computer-use")
    with pytest.raises(ValueError, match="request must be one of"):
        ClaudeAdapter(model="claude-sonnet-4-5", request="agentic")


# ------------------------------------------------------------------ the commands
@pytest.mark.parametrize(
    ("agent", "extra", "seen", "tool"),
    [
        ("claude", [], "1456x819", None),
        (
            "claude",
            ["--model", "claude-opus-4-7", "--request-format", "computer-use"],
            "2576x1449",
            '"display_width_px": 2576',
        ),
        ("gemini", [], "3840x2160", None),
        (
            "gemini",
            ["--model", "gemini-3.5-flash", "--request-format", "computer-use"],
            "3840x2160",
            '"computer_use"',
        ),
        ("openai", [], "2048x1152", None),
        (
            "openai",
            ["--image-detail", "original", "--request-format", "computer-use"],
            "3840x2160",
            '"type": "computer"',
        ),
    ],
)
def test_show_prompt_prints_each_providers_request_at_the_size_seen(agent, extra, seen, tool, capsys):
    from regionfocus.adapters.cli import main as adapters_main

    assert adapters_main(["show-prompt", "--agent", agent, "--size", "3840x2160", *extra]) == 0
    out = capsys.readouterr().out
    body = json.loads(out)
    assert f"{seen} px>" in out and "model" in body
    assert (tool in out) if tool else ("tools" not in body and "computerUse" not in out)


@pytest.mark.parametrize("agent", ["claude", "gemini", "openai"])
def test_show_prompt_prints_every_request_kind(agent, capsys):
    from regionfocus.adapters.cli import SHOW_KINDS
    from regionfocus.adapters.cli import main as adapters_main

    for kind in SHOW_KINDS:
        assert adapters_main(["show-prompt", "--agent", agent, "--kind", kind, "--size", "1280x800"]) == 0, (
            kind
        )
        assert "px>" in capsys.readouterr().out, kind


def test_a_missing_sdk_exits_2_naming_the_hosted_extra(tmp_path):
    import subprocess
    import sys

    from .test_screenspot_helpers import fresh_dataset

    data = fresh_dataset(tmp_path / "data")
    code = (
        "import sys\nsys.modules['anthropic'] = None  # what a missing package looks like\n"
        "from regionfocus.cli import main\n"
        f"sys.exit(main(['screenspot-pro', '--data', {str(data)!r}, '--out', {str(tmp_path / 'run')!r}, "
        "'--agent', 'claude', '--model', 'claude-sonnet-4-5']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "pip install 'regionfocus[hosted]'" in done.stderr and "Traceback" not in done.stderr
