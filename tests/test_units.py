import pytest

from fatpipe.units import UnitError, parse_per_second, parse_rate_bps, parse_size_bytes, parse_time_s


@pytest.mark.parametrize("text,bps", [("10Gbit", 1e10), ("100Mbit", 1e8), ("1.5Gbps", 1.5e9), ("64kbit", 64e3),
                                      (5e6, 5e6)])
def test_rates_are_decimal_bits_per_second(text, bps):
    assert parse_rate_bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text,s", [("20ms", 0.02), ("70s", 70), ("500us", 5e-4), ("2min", 120), (0.5, 0.5)])
def test_times_are_seconds(text, s):
    assert parse_time_s(text) == pytest.approx(s)


@pytest.mark.parametrize("text,b", [("1500B", 1500), ("6MB", 6_000_000), ("6MiB", 6291456), ("1.5KB", 1500),
                                    (9000, 9000)])
def test_sizes_distinguish_decimal_and_binary_prefixes(text, b):
    assert parse_size_bytes(text) == b


def test_event_rate():
    assert parse_per_second("200/s") == 200


@pytest.mark.parametrize("parser,bad", [(parse_rate_bps, "10Gbt"), (parse_time_s, "20"),
                                        (parse_size_bytes, "6 furlongs"), (parse_rate_bps, "fast")])
def test_bad_units_name_the_value_and_examples(parser, bad):
    with pytest.raises(UnitError, match="e.g."):
        parser(bad)


def test_booleans_are_not_numbers():
    with pytest.raises(UnitError, match="expected a rate"):
        parse_rate_bps(True)
