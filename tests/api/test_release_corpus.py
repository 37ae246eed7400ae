"""The seeded release corpus (docs/testing.md, "Release corpus"): every case of
release_corpus_cases.py, re-run with the imported dpsketch, releases exactly the items and values
stored in tests/data/release_corpus.json (recorded by tools/record_release_corpus.py)."""

import copy
import json
import math
from pathlib import Path

import pytest

import dpsketch
import release_corpus_cases as C

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "data" / "release_corpus.json").read_text(encoding="utf-8"))


def test_corpus_and_cases_match():
    assert CORPUS["version"] == C.CORPUS_VERSION and CORPUS["seed"] == C.SEED
    stored, defined = set(CORPUS["cases"]), set(C.CASES)
    assert not defined - stored, f"not recorded (run tools/record_release_corpus.py): {sorted(defined - stored)}"
    assert not stored - defined, f"recorded but no longer defined: {sorted(stored - defined)}"


def test_inputs_unchanged():
    # A difference here is in the generated inputs (numpy's generators, dpsketch.datasets), not in
    # the releases: the case failures that follow it say nothing about the mechanisms.
    assert C.differences(CORPUS["inputs"], C.input_digests(dpsketch)) == []


@pytest.mark.parametrize("name", list(C.CASES))
def test_case_releases_the_stored_values(name):
    diffs = C.differences(CORPUS["cases"][name], C.run_case(dpsketch, name), name)
    assert not diffs, "\n".join(diffs[:20])


# -- the comparison itself -------------------------------------------------------------------

def _first_number(rec, path=()):
    """Path of the first number in a record (a guarantee, a threshold, a noisy value, a count)."""
    if isinstance(rec, (int, float)) and not isinstance(rec, bool):
        return path
    items = rec.items() if isinstance(rec, dict) else enumerate(rec) if isinstance(rec, list) else ()
    for k, v in items:
        if k == "metadata":
            continue
        found = _first_number(v, path + (k,))
        if found is not None:
            return found
    return None


def _nudge(rec, path):
    """``rec`` with the number at ``path`` moved up: an int by 1, a float to the next float."""
    out = copy.deepcopy(rec)
    inner = out
    for k in path[:-1]:
        inner = inner[k]
    x = inner[path[-1]]
    inner[path[-1]] = x + 1 if isinstance(x, int) else math.nextafter(x, math.inf)
    return out


def test_a_changed_value_is_caught():
    rec = CORPUS["cases"]["dpss_int_private_length"]
    moved = copy.deepcopy(rec)
    moved["items"][0][1] += 1
    v = rec["items"][0][1]
    assert C.differences(rec, moved) == [f"/items[0][1]: {v} -> {v + 1}"]
    swapped = copy.deepcopy(rec)
    swapped["items"][0], swapped["items"][1] = swapped["items"][1], swapped["items"][0]
    assert len(C.differences(rec, swapped)) == 4
    shorter = copy.deepcopy(rec)
    shorter["items"].pop()
    assert C.differences(rec, shorter) == [f"/items: length {len(rec['items'])} -> {len(rec['items']) - 1}"]
    for name, stored in CORPUS["cases"].items():  # every case holds a number, compared to the last bit
        path = _first_number(stored)
        assert path is not None, name
        assert C.differences(stored, _nudge(stored, path)), (name, path)


def test_metadata_may_gain_fields_but_not_change_them():
    rec = CORPUS["cases"]["unit_heavy_hitters_gaussian"]
    more = copy.deepcopy(rec)
    more["metadata"]["a_new_field"] = 1
    assert C.differences(rec, more) == []
    other = copy.deepcopy(rec)
    other["metadata"]["privacy_unit"] = "one stream element"
    assert C.differences(rec, other) == ["/metadata/privacy_unit: 'privacy_id' -> 'one stream element'"]
    gone = copy.deepcopy(rec)
    del gone["metadata"]["neighbours"]
    assert C.differences(rec, gone) == ["/metadata/neighbours: missing"]
    extra = copy.deepcopy(rec)
    extra["new_value"] = 1  # outside the metadata a new field is a new record: refused
    assert C.differences(rec, extra) == ["/new_value: new field"]


def test_numbers_compare_by_value_and_types_stay_apart():
    assert C.differences({"v": 3}, {"v": 3.0}) == []
    assert C.differences({"v": float("nan")}, {"v": float("nan")}) == []
    assert C.differences({"k": "3"}, {"k": 3}) == ["/k: '3' -> 3"]
    assert C.differences({"b": True}, {"b": 1}) == ["/b: True -> 1"]
