"""Key averages: aggregation, sorting, rendering, and agreement between live and exported."""

from __future__ import annotations

import re

import pytest

from autograd_async.profiler import KeyAverages, key_averages, summarize, to_chrome_trace
from autograd_async.profiler.key_averages import format_ns

from .synthetic import backward_events, gpu_events, node


def test_rows_aggregate_count_total_mean_min_max_per_name_and_device():
    events = [
        node("cpu", 10, "MulBackward0", i, 1000 * i, 1000 * i + d)
        for i, d in enumerate([300, 100, 200], start=1)
    ]
    events.append(node("sim:0", 20, "MulBackward0", 9, 0, 50))
    table = key_averages(events)
    row = table.find("MulBackward0", "cpu")
    assert (row.count, row.total_ns, row.min_ns, row.max_ns) == (3, 600, 100, 300)
    assert row.mean_ns == pytest.approx(200.0)
    assert table.find("MulBackward0", "sim:0").count == 1
    with pytest.raises(KeyError):
        table.find("MulBackward0")  # two devices


def test_sorted_by_total_by_default_and_sortable():
    table = key_averages(backward_events())
    totals = [r.total_ns for r in table]
    assert totals == sorted(totals, reverse=True)
    assert [r.count for r in table.sort_by("count")][0] == max(r.count for r in table)
    names = [r.name for r in table.sort_by("name")]
    assert names == sorted(names)
    with pytest.raises(ValueError, match="unknown sort key"):
        table.sort_by("bogus")


def test_table_prints_a_row_per_key():
    table = key_averages(backward_events() + gpu_events())
    text = str(table)
    assert text.splitlines()[1].split()[:4] == ["Name", "Device", "Kind", "Count"]
    for row in table:
        assert any(line.startswith(row.name) and row.device in line for line in text.splitlines())
    assert len(table.table(row_limit=2).splitlines()) == 2 + 4 + 2  # rows, rules, totals, legend
    assert "gpu" in text and "caller" in text


def test_the_share_column_says_it_is_a_share_of_its_kind():
    table = key_averages(backward_events() + gpu_events())
    lines = str(table).splitlines()
    assert "% of kind" in lines[1] and "Total %" not in lines[1]
    assert lines[-1].startswith("% of kind: share of the total time of the row's kind")
    # the shares of one kind add up to 100%, whatever the other kinds hold
    rows = [re.split(r" {2,}", line) for line in lines[3:-3]]  # names may hold single spaces
    assert len(rows) == len(table)
    for kind in {r.kind for r in table}:
        shares = [float(cells[5].rstrip("%")) for cells in rows if cells[2] == kind]
        assert sum(shares) == pytest.approx(100.0, abs=0.3)


def test_live_and_exported_key_averages_agree():
    events = backward_events() + gpu_events()
    live = key_averages(events)
    exported = summarize(to_chrome_trace(events)).key_averages
    as_tuples = lambda t: sorted((r.name, r.device, r.kind, r.count, r.total_ns) for r in t)
    assert as_tuples(live) == as_tuples(exported)


def test_empty_table_renders():
    assert "0 rows" in str(KeyAverages([]))


@pytest.mark.parametrize(
    "ns,text", [(12, "12ns"), (1500, "1.500us"), (2_500_000, "2.500ms"), (3e9, "3.000s")]
)
def test_format_ns(ns, text):
    assert format_ns(ns) == text
