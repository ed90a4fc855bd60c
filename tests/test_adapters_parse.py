"""Adapter parsers on golden answers (tests/golden/answers.json), against our expected
original-pixel results and, for UI-TARS, against the official ``ui-tars`` parser as an oracle.
Also: fuzzing (never raise), the registry, serve-command and the ``parse`` CLI."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionfocus.actions import Action
from regionfocus.adapters import get_adapter, known_adapters, register_adapter
from regionfocus.adapters.cli import main as cli_main
from regionfocus.adapters.cli import parse_command, serve_command_command
from regionfocus.adapters.families.answers import typed_text
from regionfocus.adapters.families.qwen import parse_qwen
from regionfocus.adapters.families.uitars import parse_uitars
from regionfocus.adapters.serving import serve_command

GOLDEN = json.loads((Path(__file__).parent / "golden" / "answers.json").read_text(encoding="utf-8"))["cases"]
UITARS = [c for c in GOLDEN if c["family"].startswith("uitars")]
TOL = 1e-6


def _norm(action: Action | None) -> dict | None:
    """The fields a golden case states, in a comparable shape."""
    if action is None:
        return None
    d = action.to_dict()
    if action.type.value == "type":
        d.setdefault("submit", False)
    return d


def _matches(expected: dict | None, got: dict | None) -> bool:
    if expected is None or got is None:
        return expected is None and got is None
    for key, want in expected.items():
        have = got.get(key)
        if key in ("point", "end_point"):
            if have is None or any(abs(a - b) > TOL for a, b in zip(have, want, strict=True)):
                return False
        elif key == "text":
            if (have or "") != want:
                return False
        elif key == "submit":
            if bool(have) != want:
                return False
        elif have != want:
            return False
    for key in ("point", "end_point"):  # no point may appear that the case does not expect
        if key in got and key not in expected:
            return False
    return True


@pytest.mark.parametrize("case", GOLDEN, ids=[c["id"] for c in GOLDEN])
def test_golden_answer_parses_to_expected_original_pixels(case):
    adapter = get_adapter(case["family"])
    got = _norm(adapter.parse_action(case["text"], *case["size"]))
    assert _matches(case["expected"], got), f"{case['id']}: expected {case['expected']}, got {got}"


def test_golden_set_is_large_and_covers_every_family():
    assert len(GOLDEN) >= 40
    assert {c["family"] for c in GOLDEN} == {"uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"}
    assert len({c["id"] for c in GOLDEN}) == len(GOLDEN)


# ------------------------------------------------------------------ the official oracle
_ORACLE_TYPES = {
    "click": "click",
    "left_single": "click",
    "left_double": "double_click",
    "right_single": "right_click",
    "hover": "hover",
    "drag": "drag",
    "select": "drag",
    "hotkey": "hotkey",
    "type": "type",
    "scroll": "scroll",
    "wait": "wait",
    "finished": "finished",
    "call_user": "call_user",
}


def _oracle_box(value: str | None, size) -> list[float] | None:
    """The oracle's box string "[x1, y1, x2, y2]" (normalised 0-1) -> centre in pixels.
    Read with a regex: the oracle's own code evals it, we never do."""
    if not value:
        return None
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", value)]
    if len(nums) != 4:
        return None
    return [(nums[0] + nums[2]) / 2 * size[0], (nums[1] + nums[3]) / 2 * size[1]]


def _oracle(case) -> tuple[dict | None, list]:
    """What ``ui_tars.action_parser`` (0.5.x) makes of a case, as a comparable dict (None
    when it raises), plus its raw structured actions."""
    ap = pytest.importorskip("ui_tars.action_parser")
    w, h = case["size"]
    model_type = "qwen25vl" if case["family"] == "uitars-1.5" else "qwen2vl"
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            actions = ap.parse_action_to_structure_output(case["text"], 1000, h, w, model_type=model_type)
    except Exception:  # noqa: BLE001 - the oracle's failure modes are what we record
        return None, []
    first = actions[0]
    inputs = first["action_inputs"]
    d: dict = {"type": _ORACLE_TYPES.get(first["action_type"], first["action_type"])}
    point = _oracle_box(inputs.get("start_box"), (w, h))
    end = _oracle_box(inputs.get("end_box"), (w, h))
    if point:
        d["point"] = point
    if end:
        d["end_point"] = end
    if d["type"] == "type":
        d["text"], d["submit"] = typed_text(inputs.get("content", ""))
    elif d["type"] == "finished" and inputs.get("content"):
        d["text"] = inputs["content"]
    elif d["type"] == "hotkey":
        d["keys"] = [k.lower() for k in inputs.get("key", inputs.get("hotkey", "")).split()]
    elif d["type"] == "scroll":
        d["direction"] = inputs.get("direction")
    return d, actions


def _same(a: dict | None, b: dict | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if set(a) - {"submit"} != set(b) - {"submit"} or bool(a.get("submit")) != bool(b.get("submit")):
        return False
    for k, v in a.items():
        if k in ("point", "end_point"):
            if any(abs(x - y) > 0.01 for x, y in zip(v, b[k], strict=True)):
                return False
        elif k != "submit" and v != b[k]:
            return False
    return True


@pytest.mark.parametrize("case", UITARS, ids=[c["id"] for c in UITARS])
def test_uitars_golden_against_official_parser(case):
    """'agree' cases: the official parser gives the same action and original-pixel point.
    'differs' cases: it really does differ (so the recorded reason stays true)."""
    ours = _norm(get_adapter(case["family"]).parse_action(case["text"], *case["size"]))
    theirs, _ = _oracle(case)
    if case["oracle"] == "agree":
        assert _same(ours, theirs), f"oracle {theirs} vs ours {ours}"
    else:
        assert not _same(ours, theirs), f"recorded as a difference but both give {ours}"


# No leading space: the package lstrips every argument (golden u15-type-leading-space).
_WORDS = st.text("abcdefgh XYZ0123.,", min_size=1, max_size=24).map(str.lstrip).filter(bool)
_XY = st.tuples(st.integers(0, 1900), st.integers(0, 1060))


def _box(key: str, xy, tag: bool) -> str:
    return f"{key}='<point>{xy[0]} {xy[1]}</point>'" if tag else f"{key}='({xy[0]},{xy[1]})'"


_CALLS = st.one_of(
    st.builds(
        lambda name, xy, tag: f"{name}({_box('point' if tag else 'start_box', xy, tag)})",
        st.sampled_from(["click", "left_double", "right_single", "hover"]),
        _XY,
        st.booleans(),
    ),
    st.builds(lambda a, b: f"drag({_box('start_box', a, False)}, {_box('end_box', b, False)})", _XY, _XY),
    st.builds(
        lambda k: f"hotkey(key='{k}')", st.sampled_from(["ctrl c", "enter", "alt tab", "ctrl shift t"])
    ),
    st.builds(lambda t, n: f"type(content='{t}{n}')", _WORDS, st.sampled_from(["", "\\n"])),
    st.builds(
        lambda xy, d: f"scroll({_box('start_box', xy, False)}, direction='{d}')",
        _XY,
        st.sampled_from(["up", "down", "left", "right"]),
    ),
    st.builds(lambda t: f"finished(content='{t}')", _WORDS),
    st.sampled_from(["wait()", "call_user()", "finished()"]),
)
_ANSWERS = st.builds(
    lambda lead, thought, call: f"{lead}{thought}\nAction: {call}" if lead else f"Action: {call}",
    st.sampled_from(["", "Thought: ", "Action_Summary: "]),
    _WORDS,
    _CALLS,
)


@settings(max_examples=150, deadline=None)
@given(_ANSWERS, st.sampled_from(["uitars-1.0", "uitars-1.5"]))
def test_uitars_agrees_with_the_official_parser_on_generated_answers(text, family):
    """Beyond the golden set: well-formed answers over the whole action space, as the model
    writes them; wherever the ``ui-tars`` package parses one, we read the same action."""
    case = {"family": family, "size": [1920, 1080], "text": text}
    theirs, _ = _oracle(case)
    if theirs is not None:
        ours = _norm(get_adapter(family).parse_action(text, 1920, 1080))
        assert _same(ours, theirs), f"{text!r}: oracle {theirs} vs ours {ours}"


def test_official_pyautogui_code_agrees_on_pointer_coordinates():
    """The oracle's ``parsing_response_to_pyautogui_code`` (with scale_factor=1, since the
    structured boxes are already 0-1) puts clicks and drags where we do."""
    ap = pytest.importorskip("ui_tars.action_parser")
    checked = 0
    for case in UITARS:
        exp = case["expected"]
        if (
            case["oracle"] != "agree"
            or not exp
            or exp["type"] not in ("click", "double_click", "right_click", "hover", "drag")
        ):
            continue
        _, actions = _oracle(case)
        w, h = case["size"]
        code = ap.parsing_response_to_pyautogui_code(actions[0], h, w, scale_factor=1)
        nums = re.search(r"pyautogui\.(?:click|doubleClick|moveTo)\((-?[\d.]+), (-?[\d.]+)", code)
        assert nums, code
        ours = get_adapter(case["family"]).parse_action(case["text"], w, h)
        assert (
            abs(float(nums.group(1)) - ours.point.x) < 0.01
            and abs(float(nums.group(2)) - ours.point.y) < 0.01
        )
        checked += 1
    assert checked >= 10


def test_official_pyautogui_scroll_is_left_unscaled():
    """A documented oracle quirk: its scroll code uses the 0-1 box as pixels; ours maps."""
    ap = pytest.importorskip("ui_tars.action_parser")
    case = next(c for c in UITARS if c["id"] == "u15-scroll")
    _, actions = _oracle(case)
    code = ap.parsing_response_to_pyautogui_code(actions[0], 1080, 1920, scale_factor=1)
    x = float(re.search(r"scroll\(-?\d+, x=([\d.]+)", code).group(1))
    assert x < 1.0  # a normalised number, not the 960 px we return
    assert get_adapter("uitars-1.5").parse_action(case["text"], 1920, 1080).point.x == pytest.approx(960)


# ------------------------------------------------------------------ robustness
_JUNK_ALPHABET = list("()'\",=<>|[]{}:_\\\n 0123456789.-abcxyz") + [
    "Action:",
    "Thought:",
    "click(",
    "start_box=",
    "type(content=",
    "<|box_start|>",
    "<|box_end|>",
    "<point>",
    "</point>",
    "<tool_call>",
    "</tool_call>",
    '{"name": "computer_use", "arguments": ',
    '"action": "left_click"',
    '"coordinate": [',
    "\ufffd",
    "\x00",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_JUNK_ALPHABET), max_size=40).map("".join))
def test_parsers_never_raise_on_junk(text):
    """The raw parsers (no safety net) on random fragments of real syntax."""
    for parse in (parse_uitars, parse_qwen):
        out = parse(text)
        assert out is None or isinstance(out, Action)


@pytest.mark.parametrize("family", ["uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"])
@pytest.mark.parametrize(
    "junk", [None, 42, "", "   ", "\x00\ufffd\x1b[0m", "Action: click(start_box='(", "<tool_call>{"]
)
def test_parse_action_returns_none_on_junk(family, junk):
    assert get_adapter(family).parse_action(junk, 1920, 1080) is None


def test_points_scale_with_original_size_not_model_size():
    """The same answer maps to different original pixels for different screenshots: the
    adapter uses the screenshot's own smart_resize, not a fixed frame."""
    a = get_adapter("qwen2.5-vl")
    text = '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [100, 100]}}</tool_call>'
    p1 = a.parse_action(text, 1932, 1092).point  # already a smart_resize size: identity
    p2 = a.parse_action(text, 3840, 2160).point  # sent as 3836x2156
    assert (p1.x, p1.y) == (100, 100)
    assert p2.x == pytest.approx(100 * 3840 / 3836) and p2.y == pytest.approx(100 * 2160 / 2156)


# ------------------------------------------------------------------ registry
def test_unknown_adapter_lists_known_names():
    with pytest.raises(ValueError) as err:
        get_adapter("gpt-9-vision")
    for name in ("uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl", "ocr"):
        assert name in str(err.value)
    assert "gpt-9-vision" in str(err.value)


def test_register_adapter_user_factory_receives_options():
    seen = {}

    class Mine:
        def __init__(self, **opts):
            seen.update(opts)

    register_adapter("test-mine", lambda **o: Mine(**o), replace=True)
    assert isinstance(get_adapter("Test-Mine", budget=7), Mine)
    assert seen == {"budget": 7}
    assert "test-mine" in known_adapters()
    with pytest.raises(ValueError, match="already registered"):
        register_adapter("test-mine", lambda **o: Mine(**o))
    with pytest.raises(ValueError, match="callable"):
        register_adapter("test-other", 3)


def test_family_defaults_and_overrides():
    """The resize table of docs/ARCHITECTURE.md §5, and every parameter overridable."""
    want = {
        "uitars-1.0": ("relative", 28, 4 * 28 * 28, 2700 * 28 * 28),
        "uitars-1.5": ("absolute", 28, 100 * 28 * 28, 16384 * 28 * 28),
        "qwen2.5-vl": ("absolute", 28, 3136, 12845056),
        "qwen3-vl": ("relative", 32, 65536, 16777216),
    }
    for name, (frame, factor, lo, hi) in want.items():
        a = get_adapter(name)
        assert (a.frame, a.resize.factor, a.resize.min_pixels, a.resize.max_pixels) == (frame, factor, lo, hi)
    b = get_adapter(
        "qwen2.5-vl", factor=14, min_pixels=196, max_pixels=1280 * 28 * 28, temperature=0.3, max_tokens=64
    )
    assert (b.resize.factor, b.resize.min_pixels, b.resize.max_pixels) == (14, 196, 1280 * 28 * 28)
    assert (b.temperature, b.max_tokens) == (0.3, 64)
    w, h = b.input_size((3840, 2160))
    assert w % 14 == 0 and h % 14 == 0 and w * h <= 1280 * 28 * 28
    with pytest.raises(ValueError, match="min_pixels"):
        get_adapter("uitars-1.5", min_pixels=10, max_pixels=5)


def test_importing_adapters_is_light():
    import subprocess
    import sys

    code = (
        "import json, sys, regionfocus.adapters; print(json.dumps(sorted(m for m in sys.modules if "
        "m.startswith('regionfocus.adapters') or m.split('.')[0] in "
        "('onnxruntime', 'rapidocr', 'openai', 'transformers', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["regionfocus.adapters", "regionfocus.adapters.registry"]


# ------------------------------------------------------------------ serve-command and CLI
@pytest.mark.parametrize("family", ["uitars-1.0", "uitars-1.5", "qwen2.5-vl", "qwen3-vl"])
def test_serve_command_has_the_recommended_flags(family):
    argv = shlex.split(serve_command(family))
    assert argv[:2] == ["vllm", "serve"]
    assert argv[argv.index("--limit-mm-per-prompt") + 1] == '{"image":5}'
    assert argv[argv.index("--max-model-len") + 1] == "32768"
    assert argv[argv.index("--generation-config") + 1] == "vllm"
    custom = shlex.split(serve_command(family, "/models/my model"))
    assert custom[2] == "/models/my model"


def test_serve_command_rejects_non_server_families():
    with pytest.raises(ValueError, match="qwen2.5-vl"):
        serve_command("ocr")


def test_cli_parse_prints_original_pixels(capsys):
    rc = cli_main(
        ["parse", "--agent", "uitars-1.5", "--size", "3840x2160", "Action: click(start_box='(1918,1078)')"]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["action"] == {"type": "click", "point": [1920.0, 1080.0]}
    assert out["model_input_size"] == [3836, 2156]


def test_cli_parse_unparseable_and_bad_size(capsys):
    # A text with no action: the documented code 3 (nothing measured), named in one line.
    assert cli_main(["parse", "--agent", "qwen3-vl", "--size", "100x100", "no action here"]) == 3
    err = capsys.readouterr().err
    assert "no action qwen3-vl's reader accepts" in err and len(err.strip().splitlines()) == 1
    # through the command's runner: exit 2 and one line naming the flag, no usage dump
    assert parse_command(["--agent", "qwen3-vl", "--size", "100by100", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("regionfocus parse: error: argument --size:") and "WIDTHxHEIGHT" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [parse_command, serve_command_command])
def test_the_family_is_agent_in_every_command_and_old_model_flags_say_so(command, capsys):
    """--model is the served model everywhere; `--model FAMILY` (the old spelling) is one line
    naming --agent, not a usage dump."""
    rest = ["--size", "10x10", "click(1,1)"] if command is parse_command else []
    assert command(["--model", "qwen2.5-vl", *rest]) == 2
    err = capsys.readouterr().err
    assert "the family is --agent now (--agent qwen2.5-vl)" in err and len(err.strip().splitlines()) == 1


def test_serve_command_model_is_the_checkpoint(capsys):
    assert serve_command_command(["--agent", "qwen2.5-vl", "--model", "/ckpt/my-qwen"]) == 0
    assert capsys.readouterr().out.startswith("vllm serve /ckpt/my-qwen ")


def test_cli_parse_rounds_float_noise(capsys):
    """A frame conversion's float noise (576.0000000000001) is not printed as data."""
    for x in range(0, 1000, 7):
        assert cli_main(["parse", "--agent", "qwen3-vl", "--size", "3840x2160", f"[{x}, {x}]"]) in (0, 3)
        out = capsys.readouterr().out
        if out:
            point = json.loads(out)["action"]["point"]
            assert all(len(repr(v).partition(".")[2]) <= 3 for v in point), point


def test_cli_serve_command(capsys):
    assert cli_main(["serve-command", "--agent", "uitars-1.5"]) == 0
    assert capsys.readouterr().out.strip() == serve_command("uitars-1.5")
