"""Cost in money: the price table and its arithmetic (a run priced from its folder:
test_screenspot_run.py)."""

import re

import pytest

from regionfocus.kit import prices


def test_the_built_in_table_prices_dated_snapshots_by_family():
    table = prices.load()
    opus = table.lookup("claude-opus-4-7-20261015")
    assert (opus.rates.input, opus.rates.cached_input, opus.rates.output) == (5.0, 0.5, 25.0)
    assert table.lookup("claude-opus-4-1").rates.input == 15.0  # the older Opus, not 4.5+
    assert table.lookup("models/gemini-3.1-pro-preview").rates.output == 12.0  # google-genai's naming
    assert table.lookup("gpt-5.5-2026-04-23").rates.output == 30.0
    assert table.lookup("gpt-5.5-pro").rates.output == 180.0
    assert table.lookup("qwen2.5-vl-72b") is None
    assert all(p.source.startswith("https://") for p in table.prices)


def test_cached_input_is_part_of_the_prompt_and_billed_at_its_rate():
    table = prices.load()
    by_model = {
        "claude-opus-4-7": {"prompt_tokens": 10_000, "cached_tokens": 4_000, "completion_tokens": 100}
    }
    assert table.cost(by_model, None) == pytest.approx((6_000 * 5 + 4_000 * 0.5 + 100 * 25) / 1e6)
    # A call whose backend named no model is the run's --model.
    assert table.cost({"": by_model["claude-opus-4-7"]}, "claude-opus-4-7") == table.cost(by_model, None)


def test_no_price_is_unknown_never_zero():
    table = prices.load()
    assert table.cost({"my-local-model": {"prompt_tokens": 5, "completion_tokens": 1}}, None) is None
    assert table.cost({"": {"prompt_tokens": 5, "completion_tokens": 1}}, None) is None
    # A request past Gemini's 200k long-context size is billed at other rates for all of it.
    big = {
        "gemini-3.1-pro-preview": {
            "prompt_tokens": 250_000,
            "completion_tokens": 1,
            "max_prompt_tokens": 250_000,
        }
    }
    assert table.cost(big, None) is None


@pytest.mark.parametrize(
    "text, complaint",
    [
        ("[[model]]\nmatch = 'x'\ninput = 1\n", "missing 'output'"),
        ("[[model]]\ninput = 1\noutput = 2\n", "needs a 'match' glob"),
        ("[[model]]\nmatch = 'x'\ninput = 'cheap'\noutput = 2\n", "must be numbers"),
        ("model = 3\n", "expected [[model]] entries"),
        ("[[model\n", "not TOML"),
    ],
)
def test_a_bad_price_file_is_named_with_what_is_wrong(tmp_path, text, complaint):
    f = tmp_path / "p.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=re.escape(complaint)) as e:
        prices.load(f)
    assert str(f) in str(e.value)


@pytest.mark.parametrize(
    ("model", "rates"),
    [
        ("claude-opus-5-5", (4.0, 0.2, 20.0)),  # Anthropic's Opus 5.5 page, not Opus 4.5's $5/$25
        ("claude-opus-5", (5.0, 0.5, 25.0)),
        ("claude-sonnet-5", (2.0, 0.2, 10.0)),
        ("claude-sonnet-5-5-20260928", (2.0, 0.2, 10.0)),
        ("gpt-5.4-pro", (30.0, None, 180.0)),  # not gpt-5.4's $2.50/$15
        ("gpt-5.4-nano", (0.2, 0.02, 1.25)),
        ("gpt-5.4", (2.5, 0.25, 15.0)),
    ],
)
def test_each_model_has_its_own_pages_price(model, rates):
    p = prices.load().lookup(model)
    assert (p.rates.input, p.rates.cached_input, p.rates.output) == rates


def test_a_price_a_glob_cannot_be_sure_of_is_unknown():
    table = prices.load()
    # Future members of a family are not priced at a neighbour's rate.
    for model in (
        "claude-opus-5-7",
        "claude-mythos-5",
        "gpt-5.4-ultra-x",
        "gpt-5.5-mini",
        "claude-sonnet-4-9",
    ):
        assert table.lookup(model) is None or table.lookup(model).match != "claude-opus-5*", model
        assert table.cost({model: {"prompt_tokens": 10, "completion_tokens": 1}}, None) is None, model


def test_long_context_tiers_are_data_and_a_long_request_is_not_under_priced():
    table = prices.load()
    for model, size in (("claude-sonnet-4-5", 200_000), ("gpt-5.4", 272_000), ("claude-haiku-5-5", 100_000)):
        p = table.lookup(model)
        assert p.above_prompt_tokens == size and p.above is not None and p.above.output > p.rates.output
        long = {model: {"prompt_tokens": size + 1, "completion_tokens": 1, "max_prompt_tokens": size + 1}}
        assert table.cost(long, None) is None
        assert f"above {size} prompt tokens" in table.describe({model})[0]
