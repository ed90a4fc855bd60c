"""Golden replay of how real VLMs answer RegionFocus's requests: judge verdicts, choices,
focal points in each family's frame, and Qwen grounding continuations after the official
pre-fill. Each case goes through the adapter the way the live answer would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.actions import Action, ActionType
from regionfocus.adapters import get_adapter
from regionfocus.adapters.backends.base import ChatResponse
from regionfocus.adapters.families.answers import parse_choice, parse_verdict
from regionfocus.geometry import Point
from regionfocus.model import Avoid, Option, Query, Verdict

GOLDEN = json.loads((Path(__file__).parent / "golden" / "natural_answers.json").read_text())
SIZE = (1920, 1080)


class Replay:
    """The transport under an adapter: answers each request with the next recorded text."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.requests: list[dict] = []

    async def complete(self, messages, **options):
        self.requests.append({"messages": messages, **options})
        return ChatResponse(self.answers.pop(0))

    async def aclose(self):
        return None


@pytest.mark.parametrize(("text", "want"), GOLDEN["judge"])
def test_judge_reads_natural_verdicts(text, want):
    assert parse_verdict(text) == Verdict(want)


@pytest.mark.parametrize(("text", "want"), GOLDEN["choice"])
def test_choice_reads_natural_answers(text, want):
    assert parse_choice(text, [1, 2, 3]) == want


@pytest.mark.parametrize(
    ("family", "text", "want"),
    [(f, t, w) for f, cases in GOLDEN["focal"].items() for t, w in cases],
)
async def test_focal_answers_in_each_family_frame(family, text, want):
    backend = Replay(text)
    adapter = get_adapter(family, backend=backend)
    reply = await adapter.propose_point(Image.new("RGB", SIZE), Query("open the Layers panel"), Avoid())
    if want is None:
        assert reply.point is None
        return
    expected = adapter.from_model(want[0], want[1], SIZE)
    assert reply.point is not None and reply.point.distance(expected) < 1e-6


@pytest.mark.parametrize(("continuation", "want"), GOLDEN["prefill"])
async def test_qwen_grounding_continuation_is_parsed_with_the_prefill(continuation, want):
    backend = Replay(continuation)
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    reply = await adapter.act(Image.new("RGB", SIZE), Query("open the Layers panel"))
    sent = backend.requests[0]
    assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
    prefill = sent["messages"][-1]
    assert prefill["role"] == "assistant" and prefill["content"].endswith('"coordinate": [')
    assert reply.text.startswith(prefill["content"])  # the trace holds the whole message
    if want is None:
        assert reply.action is None
        return
    expected = adapter.from_model(want[0], want[1], SIZE)
    assert reply.action.type == ActionType.CLICK and reply.point.distance(expected) < 1e-6


@pytest.mark.parametrize("family", list(GOLDEN["focal"]))
async def test_a_choice_given_as_a_point_picks_the_nearest_star(family):
    adapter = get_adapter(family, backend=None)
    stars = [Point(400, 300), Point(1500, 800)]
    options = [Option(i + 1, Action(ActionType.CLICK, p), True) for i, p in enumerate(stars)]
    near = adapter.to_model(Point(1510, 790), SIZE)
    far = adapter.to_model(Point(960, 540), SIZE)
    for xy, want in ((near, 2), (far, None)):
        adapter.backend = Replay(f"The best one is at ({xy[0]:.0f}, {xy[1]:.0f}).")
        reply = await adapter.choose(Image.new("RGB", SIZE), Query("x"), options)
        assert reply.choice == want


async def test_a_server_without_continue_final_message_gets_the_request_without_prefill():
    class Refusing(Replay):
        async def complete(self, messages, **options):
            if options.get("continue_final_message"):
                self.requests.append({"messages": messages, **options})
                err = RuntimeError("HTTP 400: Unrecognized request argument supplied: continue_final_message")
                err.status = 400
                raise err
            return await super().complete(messages, **options)

    backend = Refusing(
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [10, 20]}}\n</tool_call>'
    )
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    reply = await adapter.act(Image.new("RGB", SIZE), Query("x"))
    assert reply.action is not None and not adapter.prefill
    assert backend.requests[-1]["messages"][-1]["role"] == "user"
    assert "continue_final_message" not in backend.requests[-1]


async def test_a_request_refused_with_and_without_prefill_keeps_the_prefill_on():
    """A 400 that the plain request gets too (an image too large, say) says nothing about the
    pre-fill: the call fails, and the next request is pre-filled again."""

    class RefusesFirstTwo(Replay):
        async def complete(self, messages, **options):
            self.requests.append({"messages": messages, **options})
            if len(self.requests) <= 2:
                err = RuntimeError("HTTP 400: image too large")
                err.status = 400
                raise err
            return ChatResponse(self.answers.pop(0))

    backend = RefusesFirstTwo("123, 45]}}\n</tool_call>")
    adapter = get_adapter("qwen2.5-vl", backend=backend)
    with pytest.raises(RuntimeError, match="image too large"):
        await adapter.act(Image.new("RGB", SIZE), Query("x"))
    assert adapter.prefill
    assert [("continue_final_message" in r) for r in backend.requests] == [True, False]
    reply = await adapter.act(Image.new("RGB", SIZE), Query("x"))
    assert backend.requests[-1]["continue_final_message"] is True
    assert reply.action is not None and reply.action.point is not None
